/* posenc-explorer.js: the course's interactive figures, computed in the reader's browser.
 *
 * No kernel, no network, no library: the numbers come from the formula of Vaswani et al. 2017,
 * "Attention Is All You Need", section 3.5, in float64 (JavaScript numbers), as in the Python
 * package posenc:
 *
 *     w_i = base ** (-2 i / d_model)          angular frequency of pair i, radians per position
 *     PE[pos, 2i] = sin(pos w_i),  PE[pos, 2i + 1] = cos(pos w_i)      (interleaved layout)
 *
 * and RoPE from Su et al. 2021, RoFormer, section 3.2 (pair i rotated by the angle pos w_i).
 * tests/test_explore.py compares every number below with posenc in float64.
 *
 * The book's directive ```{posenc-explorer} NAME``` (book/_ext/posenc_explorer.py) writes
 * <div class="posenc-explorer" data-figure="NAME"> holding a static image (for print and for
 * readers without JavaScript); this file adds the live figure next to it:
 *   table     heatmap of PE(pos, j) (canvas ImageData) and two columns against pos (SVG)
 *   rotation  one (sin, cos) pair on the unit circle at pos and pos + k
 *   dot       PE(m) . PE(n) against m - n, and the Gram matrix of 64 positions
 *   rope      score of one query/key content pair against distance: added encoding and RoPE
 * Each figure has native labelled controls and an aria-live summary of its setting. Its
 * element gets a property `posencExplorer` ({figure, state, controls, data, redraw, lastRedrawMs,
 * timings: the table figure's compute / paint / chart milliseconds}) that
 * the tests and tools/bench_explore.py read; window.posencExplorer holds the pure functions.
 * The colour map (matplotlib's RdBu_r, the one of posenc.plot) comes from
 * posenc-explorer-colormap.js, which the Sphinx extension writes at build time.
 */
(function () {
  "use strict";

  // --- numerics: pure functions of the formula ------------------------------------------------

  /** Angular frequency of pair i (radians per position): base ** (-2 i / dModel). */
  function angularFrequency(i, dModel, base) {
    return Math.pow(base, (-2 * i) / dModel);
  }

  /** Pair index and function of column j: {i, fn: "sin" | "cos"}. Interleaved: column 2i is
   * sin and 2i + 1 is cos of pair i. Concatenated ([sin | cos]): the ceil(dModel / 2) sines
   * first, then the floor(dModel / 2) cosines. An odd width has one sine more than cosines. */
  function columnInfo(j, dModel, layout) {
    if (layout === "concatenated") {
      const nSin = Math.ceil(dModel / 2);
      return j < nSin ? {i: j, fn: "sin"} : {i: j - nSin, fn: "cos"};
    }
    return {i: j >> 1, fn: j % 2 === 0 ? "sin" : "cos"};
  }

  /** The column of pair i's sine or cosine in a layout (-1 if that column does not exist). */
  function columnOf(i, fn, dModel, layout) {
    const nSin = Math.ceil(dModel / 2);
    if (fn === "cos" && i >= Math.floor(dModel / 2)) return -1;
    if (layout === "concatenated") return fn === "sin" ? i : nSin + i;
    return fn === "sin" ? 2 * i : 2 * i + 1;
  }

  /** Rows per block in encodingTable, as posenc.encoding.BLOCK_ROWS. */
  const BLOCK_ROWS = 64;

  /** The encoding table: a Float64Array of seqLen * dModel values, row r (position
   * offset + r) after row, as posenc.positional_encoding(seqLen, dModel, base=base,
   * offset=offset) in the interleaved layout, its columns regrouped in the concatenated one.
   * `out`, if given and long enough, is filled (a view of its start is returned) instead of
   * a new array.
   *
   * Method (posenc's): rows in blocks of BLOCK_ROWS positions p + r; the angle-addition
   * identities sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b - sin a sin b
   * give each block from sin/cos of p w (one row) and of r w (a table made once), so most
   * entries cost two multiplications and an addition instead of a sine: about 7 times fewer
   * calls of Math.sin/Math.cos at 512 x 512. Values are clipped to [-1, 1] as in posenc. */
  function encodingTable(seqLen, dModel, base, offset, layout, out) {
    const need = seqLen * dModel;
    const pe = out && out.length >= need ? out.subarray(0, need) : new Float64Array(need);
    const nPairs = Math.ceil(dModel / 2), fineRows = Math.min(BLOCK_ROWS, seqLen);
    const sinCol = new Int32Array(nPairs), cosCol = new Int32Array(nPairs), w = new Float64Array(nPairs);
    for (let i = 0; i < nPairs; i++) {
      w[i] = angularFrequency(i, dModel, base);
      sinCol[i] = columnOf(i, "sin", dModel, layout);
      cosCol[i] = columnOf(i, "cos", dModel, layout);
    }
    const sinFine = new Float64Array(fineRows * nPairs), cosFine = new Float64Array(fineRows * nPairs);
    for (let r = 0; r < fineRows; r++) {
      for (let i = 0; i < nPairs; i++) {
        sinFine[r * nPairs + i] = Math.sin(r * w[i]);
        cosFine[r * nPairs + i] = Math.cos(r * w[i]);
      }
    }
    const sinP = new Float64Array(nPairs), cosP = new Float64Array(nPairs);
    const clip = v => (v > 1 ? 1 : v < -1 ? -1 : v);
    for (let start = 0; start < seqLen; start += BLOCK_ROWS) {
      for (let i = 0; i < nPairs; i++) {
        const coarse = (offset + start) * w[i];
        sinP[i] = Math.sin(coarse);
        cosP[i] = Math.cos(coarse);
      }
      const rows = Math.min(BLOCK_ROWS, seqLen - start);
      for (let r = 0; r < rows; r++) {
        const row = (start + r) * dModel, fine = r * nPairs;
        for (let i = 0; i < nPairs; i++) {
          const sf = sinFine[fine + i], cf = cosFine[fine + i];
          pe[row + sinCol[i]] = clip(sinP[i] * cf + cosP[i] * sf);
          if (cosCol[i] >= 0) pe[row + cosCol[i]] = clip(cosP[i] * cf - sinP[i] * sf);
        }
      }
    }
    return pe;
  }

  /** PE(pos) as a Float64Array of dModel values (interleaved layout). */
  function encodingRow(pos, dModel, base) {
    return encodingTable(1, dModel, base, pos, "interleaved");
  }

  /** Dot product of two equally long arrays. */
  function dot(a, b) {
    let s = 0;
    for (let j = 0; j < a.length; j++) s += a[j] * b[j];
    return s;
  }

  /** PE(n + delta) . PE(n) for an even dModel, from the angle-difference identity:
   * sum over pairs of sin(a) sin(b) + cos(a) cos(b) = cos(a - b) = cos(delta w_i). It does not
   * depend on n, and cos is even: the same for delta and -delta. */
  function dotAtDistance(delta, dModel, base) {
    let s = 0;
    for (let i = 0; i < dModel / 2; i++) s += Math.cos(delta * angularFrequency(i, dModel, base));
    return s;
  }

  /** Gram matrix of the encodings of positions 0 .. n - 1: Float64Array n * n, entry
   * (m, p) = PE(m) . PE(p), from the vectors themselves (not from the identity above). */
  function gramMatrix(n, dModel, base) {
    const pe = encodingTable(n, dModel, base, 0, "interleaved");
    const g = new Float64Array(n * n);
    for (let m = 0; m < n; m++) {
      for (let p = 0; p <= m; p++) {
        let s = 0;
        for (let j = 0; j < dModel; j++) s += pe[m * dModel + j] * pe[p * dModel + j];
        g[m * n + p] = s;
        g[p * n + m] = s;
      }
    }
    return g;
  }

  /** RoPE (interleaved pairs): x rotated pair by pair by the angles pos * w_i, as
   * posenc.rope(x, offset=pos) for one row. x has an even length dHead. */
  function rotate(x, pos, base) {
    const d = x.length, y = new Float64Array(d);
    for (let i = 0; i < d / 2; i++) {
      const angle = pos * angularFrequency(i, d, base), c = Math.cos(angle), s = Math.sin(angle);
      const a = x[2 * i], b = x[2 * i + 1];
      y[2 * i] = a * c - b * s;
      y[2 * i + 1] = a * s + b * c;
    }
    return y;
  }

  /** The content vector of the RoPE figure: every coordinate 1/sqrt(2), so that its norm,
   * sqrt(dHead / 2), is that of an encoding vector. */
  function contentVector(dHead) {
    return new Float64Array(dHead).fill(Math.SQRT1_2);
  }

  /** Scores of a query at position keyPos + delta against a key at position keyPos, both with
   * the content x, for delta = 0 .. maxDistance: added = (x + PE(keyPos + delta)) . (x + PE(keyPos))
   * and rope = RoPE(x, keyPos + delta) . RoPE(x, keyPos). Only the first depends on keyPos. */
  function ropeScores(maxDistance, dHead, base, keyPos) {
    const x = contentVector(dHead), n = keyPos || 0;
    const pe = encodingTable(maxDistance + 1, dHead, base, n, "interleaved");
    const key = x.map((v, j) => v + pe[j]);
    const ropeKey = rotate(x, n, base);
    const added = new Float64Array(maxDistance + 1), rope = new Float64Array(maxDistance + 1);
    for (let delta = 0; delta <= maxDistance; delta++) {
      let s = 0;
      for (let j = 0; j < dHead; j++) s += (x[j] + pe[delta * dHead + j]) * key[j];
      added[delta] = s;
      rope[delta] = dot(rotate(x, n + delta, base), ropeKey);
    }
    return {content: x, added, rope};
  }

  // --- drawing helpers --------------------------------------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";
  let uid = 0;

  function el(tag, attrs, ...children) {
    const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4))
      : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v; else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  }

  /** A number for people: up to 4 significant digits, no exponent below 1e6. */
  function fmt(x, digits) {
    if (!isFinite(x)) return String(x);
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return x.toExponential((digits || 4) - 1);
    return String(Number(x.toPrecision(digits || 4)));
  }

  /** The colour map as 256 packed RGBA words (little-endian canvas order). */
  function colormap() {
    const hex = (window.posencExplorerColormap || {}).rgb ||
      "3b4cc0dddddd" /* fallback: blue, grey (never used by the built site) */;
    const n = hex.length / 6, lut = new Uint32Array(256);
    for (let k = 0; k < 256; k++) {
      const c = Math.min(n - 1, Math.round((k / 255) * (n - 1))) * 6;
      const r = parseInt(hex.slice(c, c + 2), 16), g = parseInt(hex.slice(c + 2, c + 4), 16),
        b = parseInt(hex.slice(c + 4, c + 6), 16);
      lut[k] = (255 << 24) | (b << 16) | (g << 8) | r;
    }
    return lut;
  }
  let LUT = null;

  /** Paint values (row-major, rows x cols), mapping [-limit, limit] onto the colour map, over
   * the whole canvas. The canvas keeps its size (no reallocation while a slider moves): the
   * values go into a hidden canvas of the same capacity (putImageData of the used corner),
   * which is then scaled onto the visible one without smoothing (drawImage). */
  function paint(canvas, values, rows, cols, limit) {
    LUT = LUT || colormap();
    const W = canvas.width, H = canvas.height;
    if (!canvas.peImage) {
      canvas.peSource = el("canvas", {width: W, height: H});
      canvas.peImage = canvas.peSource.getContext("2d").createImageData(W, H);
    }
    const words = new Uint32Array(canvas.peImage.data.buffer);
    const scale = 127.5 / limit;
    for (let r = 0; r < rows; r++) {
      for (let c = 0, k = r * cols, w = r * W; c < cols; c++) {
        const index = ((values[k + c] + limit) * scale + 0.5) | 0;  // round half up
        words[w + c] = LUT[index < 0 ? 0 : index > 255 ? 255 : index];
      }
    }
    canvas.peSource.getContext("2d").putImageData(canvas.peImage, 0, 0, 0, 0, cols, rows);
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.clearRect(0, 0, W, H);
    ctx.drawImage(canvas.peSource, 0, 0, cols, rows, 0, 0, W, H);
    canvas.peRows = rows;
    canvas.peCols = cols;
  }

  /** A colour bar: a small canvas with the colour map and its end and middle labels. */
  function colorbar(label) {
    const bar = el("canvas", {class: "pe-colorbar-ramp", width: 256, height: 1, "aria-hidden": "true"});
    const ends = el("span", {class: "pe-colorbar-ends", "aria-hidden": "true"},
      el("span", {}), el("span", {text: "0"}), el("span", {}));
    const box = el("div", {class: "pe-colorbar"}, el("span", {class: "pe-colorbar-label", text: label}), bar, ends);
    box.setLimit = function (limit) {
      LUT = LUT || colormap();
      const ctx = bar.getContext("2d"), image = ctx.createImageData(256, 1);
      new Uint32Array(image.data.buffer).set(LUT);
      ctx.putImageData(image, 0, 0);
      ends.children[0].textContent = fmt(-limit);
      ends.children[2].textContent = fmt(limit);
    };
    return box;
  }

  /** A line chart in SVG: series [{x: array, y: array, name, cls}] on axes with labels. */
  function lineChart(title) {
    const W = 640, H = 260, L = 52, R = 12, T = 10, B = 40;
    const svg = el("svg:svg", {viewBox: `0 0 ${W} ${H}`, class: "pe-chart", role: "img"});
    const label = el("svg:title", {text: title});
    const grid = el("svg:g", {class: "pe-axes"}), lines = el("svg:g", {}), legend = el("div", {class: "pe-legend", "aria-hidden": "true"});
    svg.append(label, grid, lines);
    svg.draw = function (series, xLabel, yLabel, yRange, description) {
      const xs = series[0].x, x0 = xs[0], x1 = xs[xs.length - 1] === x0 ? x0 + 1 : xs[xs.length - 1];
      let [y0, y1] = yRange || [Infinity, -Infinity];
      if (!yRange) for (const s of series) for (const v of s.y) { if (v < y0) y0 = v; if (v > y1) y1 = v; }
      if (y1 - y0 < 1e-12) { y0 -= 1; y1 += 1; }
      const sx = x => L + ((x - x0) / (x1 - x0)) * (W - L - R), sy = y => T + ((y1 - y) / (y1 - y0)) * (H - T - B);
      grid.replaceChildren(
        el("svg:rect", {x: L, y: T, width: W - L - R, height: H - T - B, class: "pe-frame"}),
        ...(y0 < 0 && y1 > 0 ? [el("svg:line", {x1: L, x2: W - R, y1: sy(0), y2: sy(0), class: "pe-zero"})] : []),
        el("svg:text", {x: L, y: H - B + 14, "text-anchor": "start", text: fmt(x0)}),
        el("svg:text", {x: W - R, y: H - B + 14, "text-anchor": "end", text: fmt(x1)}),
        el("svg:text", {x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", class: "pe-axis-label", text: xLabel}),
        el("svg:text", {x: L - 4, y: T + 10, "text-anchor": "end", text: fmt(y1)}),
        el("svg:text", {x: L - 4, y: H - B, "text-anchor": "end", text: fmt(y0)}),
        el("svg:text", {x: 12, y: (T + H - B) / 2, "text-anchor": "middle", class: "pe-axis-label",
          transform: `rotate(-90 12 ${(T + H - B) / 2})`, text: yLabel}));
      lines.replaceChildren(...series.map(s => {
        let d = "";
        for (let k = 0; k < s.x.length; k++) d += (k ? "L" : "M") + sx(s.x[k]).toFixed(1) + " " + sy(s.y[k]).toFixed(1);
        return el("svg:path", {d, class: "pe-line " + s.cls});
      }));
      legend.replaceChildren(...series.map(s => el("span", {class: "pe-key " + s.cls, text: s.name})));
      label.textContent = description;
    };
    const box = el("div", {class: "pe-chart-box"}, svg, legend);
    box.draw = svg.draw;
    return box;
  }

  /** A labelled control: a range or number input, or a select, with its shown value. */
  function control(spec, onChange) {
    const id = `pe-${++uid}`;
    let input;
    if (spec.options) {
      input = el("select", {id});
      for (const [value, text] of spec.options) input.append(el("option", {value, text}));
    } else {
      input = el("input", {id, type: spec.type || "range", min: spec.min, max: spec.max, step: spec.step || 1});
    }
    input.value = spec.value;
    const shown = el("output", {for: id, "aria-hidden": "true"});
    const update = () => {
      const text = spec.show ? spec.show(input.value) : input.value;
      shown.textContent = spec.options ? "" : text;
      if (!spec.options) input.setAttribute("aria-valuetext", text);
    };
    const handler = () => {
      if (spec.type === "number") {
        const v = Math.round(Number(input.value));
        if (!isFinite(v) || input.value === "") return;  // mid-typing: keep the figure
        input.value = Math.min(spec.max, Math.max(spec.min, v));
      }
      update(); onChange();
    };
    input.addEventListener("input", handler);
    input.addEventListener("change", handler);
    update();
    const box = el("div", {class: "pe-control"}, el("label", {for: id, text: spec.label}), input, shown);
    box.input = input;
    box.sync = update;
    return box;
  }

  const logBase = {label: "base (log scale)", min: 1, max: 6, step: 0.05, value: 4,
    show: v => "base = " + fmt(Math.pow(10, Number(v)))};
  const baseOf = v => Math.pow(10, Number(v));

  /** The frame shared by the figures: title, controls, figure area, live summary. */
  function frame(container, title, specs, redraw) {
    const controls = {}, row = el("div", {class: "pe-controls"});
    const summary = el("p", {class: "pe-summary", "aria-live": "polite"});
    const area = el("div", {class: "pe-area"});
    const figure = el("figure", {class: "pe-figure"}, el("figcaption", {class: "pe-title", text: title}), area);
    const state = {};
    const run = force => {
      // Keys fire both "input" and "change": redraw once per new setting.
      const changed = Object.entries(controls).filter(([name, box]) => state[name] !== box.input.value);
      if (!changed.length && force !== true) return;
      for (const [name, box] of Object.entries(controls)) state[name] = box.input.value;
      const t0 = performance.now();
      summary.textContent = redraw(state);
      api.lastRedrawMs = performance.now() - t0;
    };
    for (const [name, spec] of Object.entries(specs)) {
      controls[name] = control(spec, run);
      row.append(controls[name]);
    }
    const live = el("div", {class: "pe-live"}, row, figure, summary);
    container.append(live);
    container.classList.add("is-live");
    const api = {figure: container.dataset.figure, state, controls, data: {}, redraw: () => run(true),
      lastRedrawMs: 0, timings: {}};
    container.posencExplorer = api;
    return {area, api, run, controls};
  }

  // --- the four figures -------------------------------------------------------------------------

  function tableFigure(container) {
    const MAX_LEN = 1024, MAX_WIDTH = 512;  // the sliders' limits
    const canvas = el("canvas", {class: "pe-heatmap", tabindex: "0", role: "img", width: MAX_WIDTH, height: MAX_LEN});
    const buffer = new Float64Array(MAX_LEN * MAX_WIDTH);
    const readout = el("p", {class: "pe-readout", "aria-live": "polite"});
    const bar = colorbar("PE[pos, j]");
    bar.setLimit(1);
    const chart = lineChart("Two columns of the encoding against pos");
    const cursor = {r: 0, j: 0};
    let pe = null, drawnKey = "";
    const {area, api, run, controls} = frame(container, "The encoding table PE(pos, j)", {
      d_model: {label: "d_model", min: 1, max: MAX_WIDTH, value: 128},
      base: logBase,
      seq_len: {label: "seq_len", min: 1, max: MAX_LEN, value: 128},
      offset: {label: "offset (first pos)", type: "number", min: 0, max: 1000000, value: 0},
      layout: {label: "layout", value: "interleaved",
        options: [["interleaved", "interleaved (sin, cos, sin, …)"], ["concatenated", "concatenated [sin | cos]"]]},
      pair: {label: "pair i of the plotted columns", min: 0, max: 63, value: 4},
    }, redraw);
    const axes = el("div", {class: "pe-heatmap-axes", "aria-hidden": "true"},
      el("span", {class: "pe-x-label", text: "column j →"}), el("span", {class: "pe-y-label", text: "pos ↓"}));
    area.append(axes, canvas, bar, readout, chart);

    function describeCell() {
      const s = api.state, d = Number(s.d_model), n = Number(s.seq_len);
      cursor.r = Math.min(cursor.r, n - 1);
      cursor.j = Math.min(cursor.j, d - 1);
      const info = columnInfo(cursor.j, d, s.layout), w = angularFrequency(info.i, d, baseOf(s.base));
      const pos = Number(s.offset) + cursor.r, value = pe[cursor.r * d + cursor.j];
      api.data.cell = {pos, j: cursor.j, i: info.i, fn: info.fn, frequency: w, wavelength: 2 * Math.PI / w, value};
      readout.textContent = `Cell pos = ${pos}, j = ${cursor.j}: ${info.fn} of pair i = ${info.i}, ` +
        `angular frequency ${fmt(w)} rad per position, wavelength ${fmt(2 * Math.PI / w)} positions, ` +
        `value ${fmt(value, 6)}.`;
    }

    function redraw(s) {
      const d = Number(s.d_model), n = Number(s.seq_len), base = baseOf(s.base), offset = Number(s.offset);
      const key = [n, d, base, offset, s.layout].join();
      const t0 = performance.now();
      if (key !== drawnKey) {  // the pair alone changes only the line plot
        pe = encodingTable(n, d, base, offset, s.layout, buffer);
        api.timings.table = performance.now() - t0;
        paint(canvas, pe, n, d, 1);
        api.timings.paint = performance.now() - t0 - api.timings.table;
        drawnKey = key;
      }
      const t1 = performance.now();
      const pairs = Math.ceil(d / 2);
      const pairInput = controls.pair.input;
      if (Number(pairInput.max) !== pairs - 1) {
        pairInput.max = pairs - 1;
        if (Number(pairInput.value) > pairs - 1) pairInput.value = pairs - 1;
        controls.pair.sync();
        s.pair = pairInput.value;
      }
      const i = Number(s.pair), w = angularFrequency(i, d, base);
      const xs = Array.from({length: n}, (_, r) => offset + r);
      const series = [];
      for (const [fn, cls] of [["sin", "pe-s1"], ["cos", "pe-s2"]]) {
        const j = columnOf(i, fn, d, s.layout);
        if (j >= 0) series.push({x: xs, y: xs.map((_, r) => pe[r * d + j]), name: `column j = ${j}: ${fn}(pos·ω_${i})`, cls});
      }
      chart.draw(series, "position pos", "PE[pos, j]", [-1, 1],
        `Columns ${series.map(t => t.name.split(":")[0].slice(7)).join(" and ")} of the encoding against pos`);
      api.timings.chart = performance.now() - t1;
      canvas.setAttribute("aria-label", `Heatmap of the encoding, ${n} positions down by ${d} columns across, ` +
        "values from -1 (blue) to 1 (red). Arrow keys move the cell whose values are read out below.");
      api.data = {seqLen: n, dModel: d, base, offset, layout: s.layout, values: pe, pair: i};
      describeCell();
      return `Encoding table: seq_len = ${n} positions from pos = ${offset}, d_model = ${d}` +
        `${d % 2 ? " (odd: the last column is a sine without its cosine)" : ""}, base = ${fmt(base)}, ` +
        `${s.layout} layout. Its ${pairs} angular frequencies fall from 1 to ${fmt(angularFrequency(pairs - 1, d, base))} ` +
        `rad per position (wavelengths ${fmt(2 * Math.PI)} to ${fmt(2 * Math.PI / angularFrequency(pairs - 1, d, base))} positions). ` +
        `Plotted: pair i = ${i}, wavelength ${fmt(2 * Math.PI / w)} positions.`;
    }

    canvas.addEventListener("mousemove", event => {
      const box = canvas.getBoundingClientRect();
      cursor.j = Math.floor(((event.clientX - box.left) / box.width) * canvas.peCols);
      cursor.r = Math.floor(((event.clientY - box.top) / box.height) * canvas.peRows);
      cursor.j = Math.max(0, cursor.j); cursor.r = Math.max(0, cursor.r);
      describeCell();
    });
    canvas.addEventListener("keydown", event => {
      const moves = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0],
        PageUp: [-16, 0], PageDown: [16, 0], Home: [0, -1e9], End: [0, 1e9]};
      const m = moves[event.key];
      if (!m) return;
      event.preventDefault();
      cursor.r = Math.max(0, cursor.r + m[0]);
      cursor.j = Math.max(0, cursor.j + m[1]);
      describeCell();
    });
    run();
  }

  function rotationFigure(container) {
    const D = 128, BASE = 10000, R = 100;
    const svg = el("svg:svg", {viewBox: "-130 -130 260 260", class: "pe-circle", role: "img"});
    const title = el("svg:title", {});
    const arc = el("svg:path", {class: "pe-arc"});
    const ray1 = el("svg:line", {class: "pe-ray pe-s1"}), ray2 = el("svg:line", {class: "pe-ray pe-s2"});
    const p1 = el("svg:circle", {r: 6, class: "pe-point pe-s1"}), p2 = el("svg:rect", {width: 11, height: 11, class: "pe-point pe-s2"});
    const t1 = el("svg:text", {class: "pe-point-label"}), t2 = el("svg:text", {class: "pe-point-label"});
    svg.append(title,
      el("svg:circle", {r: R, class: "pe-unit"}),
      el("svg:line", {x1: -120, x2: 120, y1: 0, y2: 0, class: "pe-zero"}),
      el("svg:line", {y1: -120, y2: 120, x1: 0, x2: 0, class: "pe-zero"}),
      el("svg:text", {x: 122, y: 14, "text-anchor": "end", class: "pe-axis-label", text: "PE[pos, 2i] = sin"}),
      el("svg:text", {x: 4, y: -118, class: "pe-axis-label", text: "PE[pos, 2i+1] = cos"}),
      arc, ray1, ray2, p1, p2, t1, t2);
    const legend = el("div", {class: "pe-legend", "aria-hidden": "true"},
      el("span", {class: "pe-key pe-s1", text: "pos (circle)"}), el("span", {class: "pe-key pe-s2", text: "pos + k (square)"}),
      el("span", {class: "pe-key pe-arc-key", text: "angle k·ω_i"}));
    const {area, api, run} = frame(container, `Shift is a rotation (d_model = ${D}, base = ${BASE})`, {
      i: {label: "pair i", min: 0, max: D / 2 - 1, value: 2},
      pos: {label: "pos", min: 0, max: 1000, value: 10},
      k: {label: "shift k", min: -200, max: 200, value: 5},
    }, redraw);
    area.append(svg, legend);

    function redraw(s) {
      const i = Number(s.i), pos = Number(s.pos), k = Number(s.k), w = angularFrequency(i, D, BASE);
      const a = pos * w, b = (pos + k) * w;
      const at = angle => [R * Math.sin(angle), -R * Math.cos(angle)];
      const [x1, y1] = at(a), [x2, y2] = at(b);
      p1.setAttribute("cx", x1); p1.setAttribute("cy", y1);
      p2.setAttribute("x", x2 - 5.5); p2.setAttribute("y", y2 - 5.5);
      for (const [ray, x, y] of [[ray1, x1, y1], [ray2, x2, y2]]) {
        ray.setAttribute("x1", 0); ray.setAttribute("y1", 0); ray.setAttribute("x2", x); ray.setAttribute("y2", y);
      }
      t1.setAttribute("x", x1 * 1.18 - 8); t1.setAttribute("y", y1 * 1.18 + 4); t1.textContent = "pos";
      t2.setAttribute("x", x2 * 1.18 - 8); t2.setAttribute("y", y2 * 1.18 + 4); t2.textContent = "pos+k";
      const turn = k * w, wrapped = ((turn % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI);
      // The arc: |k| w modulo a full turn, clockwise for k > 0 (the direction pos moves in).
      const signed = k >= 0 ? wrapped : -(((-turn) % (2 * Math.PI))), r = 0.45 * R;
      const [ax, ay] = [r * Math.sin(a), -r * Math.cos(a)], [bx, by] = [r * Math.sin(a + signed), -r * Math.cos(a + signed)];
      arc.setAttribute("d", `M ${ax} ${ay} A ${r} ${r} 0 ${Math.abs(signed) > Math.PI ? 1 : 0} ${signed >= 0 ? 1 : 0} ${bx} ${by}`);
      const pe0 = [Math.sin(a), Math.cos(a)], pek = [Math.sin(b), Math.cos(b)];
      api.data = {dModel: D, base: BASE, i, pos, k, frequency: w, angle: turn, at_pos: pe0, at_pos_k: pek};
      const deg = signed * 180 / Math.PI;
      title.textContent = `Unit circle with pair ${i} at pos ${pos} and at pos + k = ${pos + k}, ${fmt(deg)} degrees apart`;
      return `Pair i = ${i} (columns ${2 * i}, ${2 * i + 1}): angular frequency ω = ${fmt(w)} rad per position, ` +
        `wavelength ${fmt(2 * Math.PI / w)} positions. At pos = ${pos} the pair is (${fmt(pe0[0])}, ${fmt(pe0[1])}); ` +
        `at pos + k = ${pos + k} it is (${fmt(pek[0])}, ${fmt(pek[1])}): turned by k·ω = ${fmt(turn)} rad ` +
        `(${fmt(deg)} degrees, modulo a full turn), whatever pos is.`;
    }
    run();
  }

  function dotFigure(container) {
    const N = 64;
    const chart = lineChart("Dot product against distance");
    const canvas = el("canvas", {class: "pe-gram", role: "img", width: N, height: N});
    const bar = colorbar("PE(m)·PE(n)");
    const {area, api, run} = frame(container, "Dot product against distance", {
      d_model: {label: "d_model (even)", min: 2, max: 512, step: 2, value: 128},
      base: logBase,
    }, redraw);
    const gramBox = el("div", {class: "pe-gram-box"},
      el("p", {class: "pe-caption", text: `Gram matrix PE(m)·PE(n), m and n from 0 to ${N - 1} (m down, n across)`}), canvas, bar);
    area.append(chart, gramBox);

    function redraw(s) {
      const d = Number(s.d_model), base = baseOf(s.base);
      const deltas = Array.from({length: 2 * N - 1}, (_, k) => k - (N - 1));
      const curve = deltas.map(delta => dotAtDistance(delta, d, base));
      chart.draw([{x: deltas, y: curve, name: "PE(n + Δ)·PE(n), any n", cls: "pe-s1"}],
        "distance Δ = m − n", "PE(m)·PE(n)", [-d / 2, d / 2],
        `Dot product of two encodings against their distance, from ${fmt(curve[0])} at Δ = ${deltas[0]} to ` +
        `${fmt(d / 2)} at Δ = 0, symmetric`);
      const gram = gramMatrix(N, d, base);
      paint(canvas, gram, N, N, d / 2);
      bar.setLimit(d / 2);
      canvas.setAttribute("aria-label", `Gram matrix of ${N} positions: constant along each diagonal m − n, ` +
        `largest (${fmt(d / 2)}) on the main diagonal`);
      api.data = {dModel: d, base, n: N, deltas, curve, gram};
      const min = Math.min(...curve), argmin = deltas[curve.indexOf(min)];
      return `Dot product with d_model = ${d}, base = ${fmt(base)}: PE(m)·PE(n) = sum over the ${d / 2} pairs ` +
        `of cos((m − n)·ω_i), a function of the distance m − n only, the same for m − n and n − m. ` +
        `It is ${fmt(d / 2)} at distance 0, ${fmt(curve[N])} at distance ±1, ${fmt(curve[2 * N - 2])} at ±${N - 1}; ` +
        `smallest ${fmt(min)} at ±${Math.abs(argmin)} within ±${N - 1}.`;
    }
    run();
  }

  function ropeFigure(container) {
    const MAX = 256;
    const chart = lineChart("Score against distance, added encoding and RoPE");
    const {area, api, run} = frame(container, "RoPE against the added encoding", {
      d_head: {label: "d_head (even)", min: 2, max: 256, step: 2, value: 64},
      base: logBase,
      key: {label: "key position n", min: 0, max: 1000, value: 0},
    }, redraw);
    area.append(chart);

    function redraw(s) {
      const d = Number(s.d_head), base = baseOf(s.base), n = Number(s.key);
      const {content, added, rope} = ropeScores(MAX, d, base, n);
      const xs = Array.from({length: MAX + 1}, (_, k) => k);
      chart.draw([
        {x: xs, y: Array.from(added), name: "added: (x + PE(n + Δ))·(x + PE(n))", cls: "pe-s1"},
        {x: xs, y: Array.from(rope), name: "RoPE: R(n + Δ)x · R(n)x", cls: "pe-s2"},
      ], "distance Δ (query at n + Δ, key at n)", "score q·k", null,
      `Scores against distance 0 to ${MAX}: added encoding from ${fmt(added[0])} to ${fmt(added[MAX])}, ` +
      `RoPE from ${fmt(rope[0])} to ${fmt(rope[MAX])}`);
      api.data = {dHead: d, base, keyPos: n, content, distances: xs, added, rope};
      return `Query at position n + Δ and key at n = ${n}, both with the content x (every coordinate 1/√2), ` +
        `d_head = ${d}, base = ${fmt(base)}. ` +
        `Added encoding: score ${fmt(added[0])} at distance 0, ${fmt(added[1])} at 1, ${fmt(added[MAX])} at ${MAX}; ` +
        `it mixes content and position terms and changes with the key's position n. RoPE: ${fmt(rope[0])} at 0, ${fmt(rope[1])} at 1, ` +
        `${fmt(rope[MAX])} at ${MAX}: a function of the distance alone, the same for every n.`;
    }
    run();
  }

  const FIGURES = {table: tableFigure, rotation: rotationFigure, dot: dotFigure, rope: ropeFigure};

  window.posencExplorer = {angularFrequency, columnInfo, columnOf, encodingTable, encodingRow,
    dotAtDistance, gramMatrix, rotate, ropeScores, FIGURES: Object.keys(FIGURES)};

  function start() {
    for (const container of document.querySelectorAll(".posenc-explorer[data-figure]")) {
      const make = FIGURES[container.dataset.figure];
      if (make && !container.posencExplorer) make(container);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
