/* posenc-explorer.js: the course's interactive figures, computed in the reader's browser.
 *
 * No kernel, no network: the numbers come from the formula of Vaswani et al. 2017,
 * "Attention Is All You Need", section 3.5, in float64 (JavaScript numbers), as in the Python
 * package posenc:
 *
 *     w_i = base ** (-2 i / d_model)          angular frequency of pair i, radians per position
 *     PE[pos, 2i] = sin(pos w_i),  PE[pos, 2i + 1] = cos(pos w_i)      (interleaved layout)
 *
 * and RoPE from Su et al. 2021, RoFormer, section 3.2 (pair i rotated by the angle pos w_i).
 * tests/test_explore.py compares every number below with posenc in float64. Scales, ticks and
 * axes come from d3 (d3-scale, d3-axis, d3-selection, d3-format: the global `d3` of
 * posenc-explorer-d3.js, which book/_ext/posenc_explorer.py copies from node_modules).
 *
 * The book's directive ```{posenc-explorer} NAME``` (book/_ext/posenc_explorer.py) writes
 * <div class="posenc-explorer" data-figure="NAME"> holding a how-to line (screen), a line for
 * print and a still image (loaded for print only); this file adds the live figure:
 *   table     heatmap of PE(pos, j) (canvas) and two columns against pos (SVG)
 *   rotation  one (cos, sin) pair on the unit circle at pos and pos + k
 *   dot       PE(m) . PE(m + k) against the shift k, and the Gram matrix of 64 positions
 *   rope      score of one query/key content pair against the shift k: added encoding and RoPE
 *   focus     softmax over keys n of PE(m) . PE(n) / sqrt(d_model), a query at m
 * Each figure has native labelled controls, a summary of its setting (text, not live) and a
 * short, debounced live announcement of what a change did. Its element gets a property
 * `posencExplorer` ({figure, state, controls, data, redraw, lastRedrawMs, announced,
 * timings: the table figure's compute / paint / chart milliseconds}) that the tests and
 * tools/bench_explore.py read; window.posencExplorer holds the pure functions.
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

  /** PE(n + k) . PE(n) for an even dModel, from the angle-difference identity:
   * sum over pairs of sin(a) sin(b) + cos(a) cos(b) = cos(a - b) = cos(k w_i). It does not
   * depend on n, and cos is even: the same for k and -k. For an odd dModel the last column is
   * a sine without its cosine, the dot product depends on n as well, and this function
   * refuses (RangeError) instead of returning a number that no pair of vectors has. */
  function dotAtDistance(k, dModel, base) {
    if (!Number.isInteger(dModel) || dModel < 2 || dModel % 2) {
      throw new RangeError(`dotAtDistance: dModel must be an even integer >= 2 (for an odd ` +
        `width PE(n + k) . PE(n) depends on n, not on k alone), got ${dModel}`);
    }
    let s = 0;
    for (let i = 0; i < dModel / 2; i++) s += Math.cos(k * angularFrequency(i, dModel, base));
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

  /** Scores of a query at position m against keys at n = m + k, k = 0 .. maxShift, query and
   * keys with the same content x: added = (x + PE(m)) . (x + PE(m + k)) and
   * rope = RoPE(x, m) . RoPE(x, m + k). Only the first depends on m. */
  function ropeScores(maxShift, dHead, base, queryPos) {
    const x = contentVector(dHead), m = queryPos || 0;
    const pe = encodingTable(maxShift + 1, dHead, base, m, "interleaved");
    const query = x.map((v, j) => v + pe[j]);
    const ropeQuery = rotate(x, m, base);
    const added = new Float64Array(maxShift + 1), rope = new Float64Array(maxShift + 1);
    for (let k = 0; k <= maxShift; k++) {
      let s = 0;
      for (let j = 0; j < dHead; j++) s += query[j] * (x[j] + pe[k * dHead + j]);
      added[k] = s;
      rope[k] = dot(ropeQuery, rotate(x, m + k, base));
    }
    return {content: x, added, rope};
  }

  /** Attention weights of a query at position m over keys at positions 0 .. nKeys - 1 from
   * position alone: softmax over n of PE(m) . PE(n) / sqrt(dModel) (the scaled dot product of
   * Vaswani et al. 2017, equation (1), on the encodings), as
   * posenc.attention.softmax(PE[m] @ PE.T / sqrt(d_model)). The largest score is subtracted
   * before exp, as there. Returns {scores, weights}, Float64Arrays of nKeys values. */
  function focusWeights(m, nKeys, dModel, base) {
    const pe = encodingTable(nKeys, dModel, base, 0, "interleaved");
    const query = pe.subarray(m * dModel, (m + 1) * dModel), scale = Math.sqrt(dModel);
    const scores = new Float64Array(nKeys), weights = new Float64Array(nKeys);
    let peak = -Infinity, total = 0;
    for (let n = 0; n < nKeys; n++) {
      scores[n] = dot(query, pe.subarray(n * dModel, (n + 1) * dModel)) / scale;
      if (scores[n] > peak) peak = scores[n];
    }
    for (let n = 0; n < nKeys; n++) total += (weights[n] = Math.exp(scores[n] - peak));
    for (let n = 0; n < nKeys; n++) weights[n] /= total;
    return {scores, weights};
  }

  // --- drawing helpers --------------------------------------------------------------------------

  const d3 = window.d3;
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

  /** Integers exactly, with thousands separators (d3-format): 1,000,200. */
  const integer = d3.format(",d");

  /** d3's nice tick values of a scale that are integers: exact positions and labels on an
   * axis of positions or columns. */
  function integerTicks(scale, count) {
    return scale.ticks(count).filter(Number.isInteger);
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

  /** Which cells each of `pixels` pixels covers along one axis of `cells` cells: pixel p shows
   * cells first[p] .. end[p] - 1 (their mean). With more pixels than cells a pixel shows the
   * one cell it lies in (cells are drawn as blocks); with fewer, the mean of the cells it
   * covers, so that no false stripes (moire) appear. */
  function pixelBlocks(pixels, cells) {
    const first = new Int32Array(pixels), end = new Int32Array(pixels);
    for (let p = 0; p < pixels; p++) {
      first[p] = Math.floor((p * cells) / pixels);
      end[p] = Math.max(first[p] + 1, Math.floor(((p + 1) * cells) / pixels));
    }
    return {first, end};
  }

  /** Paint values (row-major, rows x cols) over the whole canvas at its own resolution (the
   * displayed size times devicePixelRatio), mapping [-limit, limit] onto the colour map: each
   * pixel shows the mean of the cells it covers (pixelBlocks). */
  function paint(canvas, values, rows, cols, limit) {
    LUT = LUT || colormap();
    const W = canvas.width, H = canvas.height, ctx = canvas.getContext("2d");
    if (!canvas.peImage || canvas.peImage.width !== W || canvas.peImage.height !== H) {
      canvas.peImage = ctx.createImageData(W, H);
    }
    const words = new Uint32Array(canvas.peImage.data.buffer);
    const rb = pixelBlocks(H, rows), cb = pixelBlocks(W, cols), scale = 127.5 / limit;
    const mean = new Float64Array(cols);
    for (let py = 0; py < H; py++) {
      const r0 = rb.first[py], r1 = rb.end[py];
      mean.fill(0);
      for (let r = r0; r < r1; r++) for (let c = 0, k = r * cols; c < cols; c++) mean[c] += values[k + c];
      if (r1 - r0 > 1) for (let c = 0; c < cols; c++) mean[c] /= r1 - r0;
      for (let px = 0, w = py * W; px < W; px++) {
        const c0 = cb.first[px], c1 = cb.end[px];
        let v = mean[c0];
        if (c1 - c0 > 1) {
          for (let c = c0 + 1; c < c1; c++) v += mean[c];
          v /= c1 - c0;
        }
        const index = Math.floor((v + limit) * scale + 0.5);  // round half up
        words[w + px] = LUT[index < 0 ? 0 : index > 255 ? 255 : index];
      }
    }
    ctx.putImageData(canvas.peImage, 0, 0);
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

  /** A heatmap with d3 axes: a canvas drawn at the display's resolution under an SVG of the
   * same proportions that holds the axes (integer ticks of rows and columns), the frame and a
   * cursor (the outline of the cell the keyboard or the pointer reads). */
  function heatmapFrame({width, height, margin, xLabel, yLabel, label}) {
    const W = width, H = height, M = margin, pw = W - M.l - M.r, ph = H - M.t - M.b;
    const canvas = el("canvas", {class: "pe-heatmap", tabindex: "0", role: "application",
      "aria-roledescription": "heatmap", "aria-label": label, width: pw, height: ph});
    Object.assign(canvas.style, {left: `${(100 * M.l) / W}%`, top: `${(100 * M.t) / H}%`,
      width: `${(100 * pw) / W}%`, height: `${(100 * ph) / H}%`});
    const svg = d3.create("svg").attr("viewBox", `0 0 ${W} ${H}`).attr("class", "pe-heatmap-axes")
      .attr("aria-hidden", "true");
    svg.append("rect").attr("class", "pe-frame").attr("x", M.l).attr("y", M.t).attr("width", pw).attr("height", ph);
    const xAxis = svg.append("g").attr("class", "pe-axis pe-x").attr("transform", `translate(0,${H - M.b})`);
    const yAxis = svg.append("g").attr("class", "pe-axis pe-y").attr("transform", `translate(${M.l},0)`);
    svg.append("text").attr("class", "pe-axis-label").attr("x", M.l + pw / 2).attr("y", H - 6)
      .attr("text-anchor", "middle").text(xLabel);
    svg.append("text").attr("class", "pe-axis-label").attr("text-anchor", "middle")
      .attr("transform", `translate(14,${M.t + ph / 2}) rotate(-90)`).text(yLabel);
    const cursor = svg.append("rect").attr("class", "pe-cursor").attr("visibility", "hidden");
    const box = el("div", {class: "pe-heatmap-frame"}, canvas, svg.node());
    let last = null;

    function fit() {
      const rect = canvas.getBoundingClientRect(), ratio = window.devicePixelRatio || 1;
      const w = Math.max(1, Math.round((rect.width || pw) * ratio)), h = Math.max(1, Math.round((rect.height || ph) * ratio));
      if (canvas.width !== w) canvas.width = w;
      if (canvas.height !== h) canvas.height = h;
    }
    box.draw = function (values, rows, cols, limit, rowStart, colStart) {
      const x = d3.scaleLinear([colStart - 0.5, colStart + cols - 0.5], [M.l, W - M.r]);
      const y = d3.scaleLinear([rowStart - 0.5, rowStart + rows - 0.5], [M.t, H - M.b]);
      xAxis.call(d3.axisBottom(x).tickValues(integerTicks(x, Math.max(2, pw / 70))).tickFormat(integer));
      yAxis.call(d3.axisLeft(y).tickValues(integerTicks(y, Math.max(2, ph / 35))).tickFormat(integer));
      last = {values, rows, cols, limit};
      box.scales = {x, y};
      fit();
      paint(canvas, values, rows, cols, limit);
    };
    /** Outline cell (r, c) of the drawn values (at least 6 units wide, so that it shows). */
    box.showCursor = function (r, c) {
      if (!last) return;
      const cw = pw / last.cols, ch = ph / last.rows, w = Math.max(cw, 6), h = Math.max(ch, 6);
      cursor.attr("x", M.l + (c + 0.5) * cw - w / 2).attr("y", M.t + (r + 0.5) * ch - h / 2)
        .attr("width", w).attr("height", h).attr("visibility", "visible");
    };
    box.hideCursor = () => cursor.attr("visibility", "hidden");
    /** The cell under a pointer event: {r, c}, clamped to the drawn values. */
    box.cellAt = function (event) {
      const rect = canvas.getBoundingClientRect();
      const c = Math.floor(((event.clientX - rect.left) / rect.width) * last.cols);
      const r = Math.floor(((event.clientY - rect.top) / rect.height) * last.rows);
      return {r: Math.min(last.rows - 1, Math.max(0, r)), c: Math.min(last.cols - 1, Math.max(0, c))};
    };
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        if (!last) return;
        const before = [canvas.width, canvas.height];
        fit();
        if (canvas.width !== before[0] || canvas.height !== before[1]) paint(canvas, last.values, last.rows, last.cols, last.limit);
      }).observe(canvas);
    }
    box.canvas = canvas;
    return box;
  }

  /** A line chart in SVG with d3 scales and axes: series [{x, y, name, cls}], x integers. */
  function lineChart(title, height) {
    const W = 640, H = height || 240, M = {l: 62, r: 14, t: 10, b: 46};
    const svg = d3.create("svg").attr("viewBox", `0 0 ${W} ${H}`).attr("class", "pe-chart").attr("role", "img");
    const label = svg.append("title").text(title);
    svg.append("rect").attr("class", "pe-frame").attr("x", M.l).attr("y", M.t)
      .attr("width", W - M.l - M.r).attr("height", H - M.t - M.b);
    const zero = svg.append("line").attr("class", "pe-zero");
    const xAxis = svg.append("g").attr("class", "pe-axis pe-x").attr("transform", `translate(0,${H - M.b})`);
    const yAxis = svg.append("g").attr("class", "pe-axis pe-y").attr("transform", `translate(${M.l},0)`);
    const xTitle = svg.append("text").attr("class", "pe-axis-label").attr("x", (M.l + W - M.r) / 2)
      .attr("y", H - 6).attr("text-anchor", "middle");
    const yTitle = svg.append("text").attr("class", "pe-axis-label").attr("text-anchor", "middle")
      .attr("transform", `translate(14,${(M.t + H - M.b) / 2}) rotate(-90)`);
    const marks = svg.append("g"), lines = svg.append("g");
    const legend = el("div", {class: "pe-legend", "aria-hidden": "true"});
    const box = el("div", {class: "pe-chart-box"}, svg.node(), legend);
    /** yDomain: fixed [low, high], or null for d3's nice extent of the values. marks: x
     * values where a vertical line is drawn (class pe-mark). */
    box.draw = function (series, xLabel, yLabel, yDomain, description, markAt) {
      const xs = series[0].x, first = xs[0], last = xs[xs.length - 1];
      // One point: half a position either side of it.
      const x = d3.scaleLinear(last === first ? [first - 0.5, first + 0.5] : [first, last], [M.l, W - M.r]);
      let y;
      if (yDomain) {
        y = d3.scaleLinear(yDomain, [H - M.b, M.t]);
      } else {
        let lo = Infinity, hi = -Infinity;
        for (const s of series) for (const v of s.y) { if (v < lo) lo = v; if (v > hi) hi = v; }
        if (hi - lo < 1e-12) { lo -= 1; hi += 1; }
        y = d3.scaleLinear([lo, hi], [H - M.b, M.t]).nice();
      }
      xAxis.call(d3.axisBottom(x).tickValues(integerTicks(x, 7)).tickFormat(integer));
      yAxis.call(d3.axisLeft(y).ticks(5));
      const [ya, yb] = y.domain();
      zero.attr("visibility", ya < 0 && yb > 0 ? "visible" : "hidden").attr("x1", M.l).attr("x2", W - M.r)
        .attr("y1", y(0)).attr("y2", y(0));
      xTitle.text(xLabel);
      yTitle.text(yLabel);
      marks.selectAll("line").data(markAt === undefined ? [] : [markAt]).join("line").attr("class", "pe-mark")
        .attr("x1", v => x(v)).attr("x2", v => x(v)).attr("y1", M.t).attr("y2", H - M.b);
      lines.selectAll("path").data(series).join("path").attr("class", s => "pe-line " + s.cls).attr("d", s => {
        let d = "";
        for (let k = 0; k < s.x.length; k++) d += (k ? "L" : "M") + x(s.x[k]).toFixed(2) + " " + y(s.y[k]).toFixed(2);
        return d;
      });
      legend.replaceChildren(...series.map(s => el("span", {class: "pe-key " + s.cls, text: s.name})));
      label.text(description);
      box.scales = {x, y};
    };
    return box;
  }

  /** A labelled control: a range (over numbers, or over the list spec.values), a number field
   * (checked when committed, never rewritten) or a select, with its shown value. */
  function control(name, spec, onChange, announce) {
    const id = `pe-${++uid}`;
    let input;
    const hint = spec.hint ? el("span", {id: `${id}-hint`, class: "pe-hint", text: spec.hint}) : null;
    if (spec.options) {
      input = el("select", {id});
      for (const [value, text] of spec.options) input.append(el("option", {value, text}));
      input.value = spec.value;
    } else if (spec.type === "number") {
      input = el("input", {id, type: "number", min: spec.min, max: spec.max, step: 1, inputmode: "numeric",
        "aria-describedby": `${id}-hint`});
      input.value = spec.value;
    } else if (spec.values) {
      input = el("input", {id, type: "range", min: 0, max: spec.values.length - 1, step: 1});
      input.value = spec.values.indexOf(spec.value);
    } else {
      input = el("input", {id, type: "range", min: spec.min, max: spec.max, step: spec.step || 1});
      input.value = spec.value;
    }
    const shown = el("output", {for: id, "aria-hidden": "true"});
    const box = el("div", {class: "pe-control"}, el("label", {for: id, text: spec.label}), input, shown);
    if (hint) box.append(hint);
    box.input = input;
    box.spec = spec;
    box.accepted = spec.values ? spec.values[Number(input.value)] : spec.type === "number" ? Number(input.value) : input.value;
    box.text = () => spec.show ? spec.show(box.accepted) : String(box.accepted);
    const update = () => {
      if (spec.values) box.accepted = spec.values[Number(input.value)];
      else if (spec.type !== "number") box.accepted = input.value;
      shown.textContent = spec.options || spec.type === "number" ? "" : box.text();
      if (input.type === "range") input.setAttribute("aria-valuetext", box.text());
    };
    if (spec.type === "number") {
      // Checked when committed (Enter, Tab, the arrow keys), never while typing and never
      // rewritten: an entry that is not a whole number from min to max is reported next to
      // the field, and the figure keeps its setting.
      input.addEventListener("change", () => {
        const v = input.valueAsNumber, range = `${integer(spec.min)} to ${integer(spec.max)}`;
        if (input.value !== "" && input.validity.valid && Number.isInteger(v)) {
          box.accepted = v;
          input.removeAttribute("aria-invalid");
          hint.classList.remove("pe-error");
          hint.textContent = spec.hint;
          onChange(name);
          return;
        }
        const what = input.value === "" ? (input.validity.badInput ? "That entry is not a number" : "The field is empty")
          : `${input.value} is ${input.validity.stepMismatch || !Number.isInteger(v) ? "not a whole number" : "out of range"}`;
        input.setAttribute("aria-invalid", "true");
        hint.classList.add("pe-error");
        hint.textContent = `${what}: enter a whole number from ${range}. The figure still shows ` +
          `${spec.name || spec.label} ${integer(box.accepted)}.`;
        announce(hint.textContent);
      });
    } else {
      const handler = () => { update(); onChange(name); };
      input.addEventListener("input", handler);
      input.addEventListener("change", handler);
    }
    update();
    box.sync = update;
    return box;
  }

  /** The base: a slider over values that print exactly (1, 2, 5 times a power of 10). */
  const BASES = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000];
  const baseControl = {label: "base", values: BASES, value: 10000, show: v => "base = " + integer(v)};

  /** The frame shared by the figures: controls beside (wide) or above (narrow) the figure, the
   * summary of the setting below, and a short live announcement of each change. */
  function frame(container, title, specs, redraw) {
    const controls = {}, row = el("div", {class: "pe-controls"});
    const summary = el("p", {class: "pe-summary"});
    const announcer = el("p", {class: "pe-sr-only", "aria-live": "polite", "aria-atomic": "true"});
    const area = el("div", {class: "pe-area"});
    const figure = el("figure", {class: "pe-figure"}, el("figcaption", {class: "pe-title", text: title}), area);
    const state = {};
    let timer = null;
    const announce = text => {
      api.pending = text;
      clearTimeout(timer);
      timer = setTimeout(() => { announcer.textContent = text; api.announced = text; api.pending = null; }, 300);
    };
    const run = (changed, force) => {
      const names = Object.keys(controls).filter(name => state[name] !== controls[name].accepted);
      if (!names.length && force !== true) return;
      for (const [name, box] of Object.entries(controls)) state[name] = box.accepted;
      const t0 = performance.now();
      const result = redraw(state, changed);
      api.lastRedrawMs = performance.now() - t0;
      summary.textContent = result.text;
      if (changed && controls[changed]) {
        const box = controls[changed];
        announce(`${box.spec.name || box.spec.label} ${box.spec.options ? box.input.selectedOptions[0].text
          : box.spec.show ? box.text().replace(/^.* = /, "") : box.text()}: ${result.brief}`);
      }
    };
    for (const [name, spec] of Object.entries(specs)) {
      controls[name] = control(name, spec, run, announce);
      row.append(controls[name]);
    }
    const body = el("div", {class: "pe-body"}, row, figure);
    const live = el("div", {class: "pe-live"}, body, summary, announcer);
    container.append(live);
    container.classList.add("is-live");
    const api = {figure: container.dataset.figure, state, controls, data: {}, redraw: () => run(null, true),
      lastRedrawMs: 0, timings: {}, announced: "", pending: null, announce};
    container.posencExplorer = api;
    return {area, api, run, controls};
  }

  // --- the five figures -------------------------------------------------------------------------

  function tableFigure(container) {
    const MAX_LEN = 1024, MAX_WIDTH = 512;  // the sliders' limits
    const buffer = new Float64Array(MAX_LEN * MAX_WIDTH);
    const heat = heatmapFrame({width: 640, height: 270, margin: {l: 66, r: 10, t: 6, b: 42},
      xLabel: "column j", yLabel: "position pos", label: "Heatmap of the encoding table"});
    const canvas = heat.canvas;
    const help = el("p", {class: "pe-caption", id: `pe-${++uid}-help`,
      text: "Focus the heatmap and use the arrow keys (Page Up and Page Down for 16 rows, Home and " +
        "End for the first and last column), or point at a cell: its values are shown below the heatmap."});
    canvas.setAttribute("aria-describedby", help.id);
    const readout = el("p", {class: "pe-readout"});
    const bar = colorbar("PE[pos, j]");
    bar.setLimit(1);
    const chart = lineChart("Two columns of the encoding against pos", 200);
    const cursor = {r: 0, j: 0};
    let pe = null, drawnKey = "";
    const {area, api, run, controls} = frame(container, "The encoding table PE(pos, j)", {
      d_model: {label: "d_model", min: 1, max: MAX_WIDTH, value: 128},
      base: baseControl,
      seq_len: {label: "seq_len", min: 1, max: MAX_LEN, value: 128},
      offset: {label: "offset (first pos)", name: "offset", type: "number", min: 0, max: 1000000, value: 0,
        hint: "A whole number from 0 to 1,000,000."},
      layout: {label: "layout", value: "interleaved",
        options: [["interleaved", "interleaved"], ["concatenated", "concatenated"]]},
      pair: {label: "pair i (line plot)", name: "pair i", min: 0, max: 63, value: 4},
    }, redraw);
    area.append(heat, bar, chart, help, readout);

    function describeCell(announceIt) {
      const s = api.state, d = Number(s.d_model), n = Number(s.seq_len);
      cursor.r = Math.min(cursor.r, n - 1);
      cursor.j = Math.min(cursor.j, d - 1);
      const info = columnInfo(cursor.j, d, s.layout), w = angularFrequency(info.i, d, Number(s.base));
      const pos = Number(s.offset) + cursor.r, value = pe[cursor.r * d + cursor.j];
      api.data.cell = {pos, j: cursor.j, i: info.i, fn: info.fn, frequency: w, wavelength: 2 * Math.PI / w, value};
      readout.textContent = `Cell pos = ${integer(pos)}, j = ${cursor.j}: ${info.fn} of pair i = ${info.i}, ` +
        `angular frequency ${fmt(w)} rad per position, wavelength ${fmt(2 * Math.PI / w)} positions, ` +
        `value ${fmt(value, 6)}.`;
      if (announceIt) {
        heat.showCursor(cursor.r, cursor.j);
        api.announce(`pos ${integer(pos)}, j ${cursor.j}: ${fmt(value, 4)} (${info.fn} of pair ${info.i})`);
      }
    }

    function redraw(s, changed) {
      const d = Number(s.d_model), n = Number(s.seq_len), base = Number(s.base), offset = Number(s.offset);
      const key = [n, d, base, offset, s.layout].join();
      const t0 = performance.now();
      if (key !== drawnKey) {  // the pair alone changes only the line plot
        pe = encodingTable(n, d, base, offset, s.layout, buffer);
        api.timings.table = performance.now() - t0;
        heat.draw(pe, n, d, 1, offset, 0);
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
        s.pair = controls.pair.accepted;
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
      const rowsPerPixel = n / heat.canvas.height;
      canvas.setAttribute("aria-label", `Heatmap of the encoding, ${n} positions down by ${d} columns across, ` +
        "values from -1 (blue) to 1 (red)");
      api.data = {seqLen: n, dModel: d, base, offset, layout: s.layout, values: pe, pair: i,
        pixels: {width: canvas.width, height: canvas.height}};
      describeCell(false);
      const last = angularFrequency(pairs - 1, d, base);
      const brief = changed === "pair" ? `wavelength ${fmt(2 * Math.PI / w)} positions`
        : `${n} positions by ${d} columns, wavelengths ${fmt(2 * Math.PI)} to ${fmt(2 * Math.PI / last)} positions`;
      return {brief, text: `Encoding table: seq_len = ${n} positions from pos = ${integer(offset)}, d_model = ${d}` +
        `${d % 2 ? " (odd: the last column is a sine without its cosine)" : ""}, base = ${integer(base)}, ` +
        `${s.layout} layout. Its ${pairs} angular frequencies fall from 1 to ${fmt(last)} ` +
        `rad per position (wavelengths ${fmt(2 * Math.PI)} to ${fmt(2 * Math.PI / last)} positions). ` +
        (rowsPerPixel > 1 ? `The heatmap has ${canvas.height} pixel rows for ${n} positions: each pixel ` +
          `shows the mean of the ${fmt(rowsPerPixel, 3)} rows it covers. ` : "") +
        `Plotted: pair i = ${i}, wavelength ${fmt(2 * Math.PI / w)} positions.`};
    }

    canvas.addEventListener("mousemove", event => {
      const cell = heat.cellAt(event);
      cursor.r = cell.r; cursor.j = cell.c;
      heat.showCursor(cursor.r, cursor.j);
      describeCell(false);
    });
    canvas.addEventListener("mouseleave", () => { if (document.activeElement !== canvas) heat.hideCursor(); });
    canvas.addEventListener("focus", () => heat.showCursor(cursor.r, cursor.j));
    canvas.addEventListener("blur", () => heat.hideCursor());
    canvas.addEventListener("keydown", event => {
      const moves = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0],
        PageUp: [-16, 0], PageDown: [16, 0], Home: [0, -1e9], End: [0, 1e9]};
      const m = moves[event.key];
      if (!m) return;
      event.preventDefault();
      cursor.r = Math.max(0, cursor.r + m[0]);
      cursor.j = Math.max(0, cursor.j + m[1]);
      describeCell(true);
    });
    run(null, true);
  }

  function rotationFigure(container) {
    const D = 128, BASE = 10000, R = 100, F = 1.45 * R;  // circle radius, frame half-width
    const s = d3.scaleLinear([-1.45, 1.45], [-F, F]), sy = d3.scaleLinear([-1.45, 1.45], [F, -F]);
    const svg = d3.create("svg").attr("viewBox", `${-F - 52} ${-F - 6} ${2 * F + 60} ${2 * F + 50}`)
      .attr("class", "pe-circle").attr("role", "img");
    const title = svg.append("title");
    svg.append("rect").attr("class", "pe-frame").attr("x", -F).attr("y", -F).attr("width", 2 * F).attr("height", 2 * F);
    svg.append("g").attr("class", "pe-axis pe-x").attr("transform", `translate(0,${F})`)
      .call(d3.axisBottom(s).tickValues([-1, -0.5, 0, 0.5, 1]));
    svg.append("g").attr("class", "pe-axis pe-y").attr("transform", `translate(${-F},0)`)
      .call(d3.axisLeft(sy).tickValues([-1, -0.5, 0, 0.5, 1]));
    svg.append("text").attr("class", "pe-axis-label").attr("x", 0).attr("y", F + 38).attr("text-anchor", "middle")
      .text("x = PE[pos, 2i+1] = cos(pos·ω_i)");
    svg.append("text").attr("class", "pe-axis-label").attr("text-anchor", "middle")
      .attr("transform", `translate(${-F - 40},0) rotate(-90)`).text("y = PE[pos, 2i] = sin(pos·ω_i)");
    svg.append("circle").attr("r", R).attr("class", "pe-unit");
    svg.append("line").attr("x1", -F).attr("x2", F).attr("class", "pe-zero");
    svg.append("line").attr("y1", -F).attr("y2", F).attr("class", "pe-zero");
    const arc = svg.append("path").attr("class", "pe-arc");
    const ray1 = svg.append("line").attr("class", "pe-ray pe-s1"), ray2 = svg.append("line").attr("class", "pe-ray pe-s2");
    const p1 = svg.append("circle").attr("r", 6).attr("class", "pe-point pe-s1");
    const p2 = svg.append("rect").attr("width", 11).attr("height", 11).attr("class", "pe-point pe-s2");
    const t1 = svg.append("text").attr("class", "pe-point-label").text("pos");
    const t2 = svg.append("text").attr("class", "pe-point-label").text("pos + k");
    const legend = el("div", {class: "pe-legend", "aria-hidden": "true"},
      el("span", {class: "pe-key pe-s1", text: "pos (circle)"}), el("span", {class: "pe-key pe-s2", text: "pos + k (square)"}),
      el("span", {class: "pe-key pe-arc-key", text: "angle k·ω_i (anticlockwise for k > 0)"}));
    const {area, api, run, controls} = frame(container, `Shift is a rotation (d_model = ${D}, base = ${integer(BASE)})`, {
      i: {label: "pair i", min: 0, max: D / 2 - 1, value: 2},
      pos: {label: "pos", min: 0, max: 1000, value: 10},
      k: {label: "shift k (pos + k ≥ 0)", name: "shift k", min: -200, max: 200, value: 5},
    }, redraw);
    area.append(svg.node(), legend);

    /** Put a point's label outside the circle at angle t, at radius r, anchored away from it. */
    function place(label, t, r) {
      const c = Math.cos(t), sn = Math.sin(t);
      label.attr("x", r * c).attr("y", -r * sn + (sn < -0.35 ? 10 : sn > 0.35 ? 0 : 4))
        .attr("text-anchor", c > 0.35 ? "start" : c < -0.35 ? "end" : "middle");
    }
    const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

    function redraw(st, changed) {
      const i = Number(st.i), pos = Number(st.pos);
      const kBox = controls.k;
      if (Number(kBox.input.min) !== -Math.min(pos, 200)) {  // no negative position pos + k
        kBox.input.min = -Math.min(pos, 200);
        if (Number(kBox.input.value) < -pos) kBox.input.value = -Math.min(pos, 200);
        kBox.sync();
        st.k = kBox.accepted;
      }
      const k = Number(st.k), w = angularFrequency(i, D, BASE);
      const a = pos * w, b = (pos + k) * w;
      const at = angle => [R * Math.cos(angle), -R * Math.sin(angle)];  // (cos, sin), y up
      const [x1, y1] = at(a), [x2, y2] = at(b);
      p1.attr("cx", x1).attr("cy", y1);
      p2.attr("x", x2 - 5.5).attr("y", y2 - 5.5);
      ray1.attr("x1", 0).attr("y1", 0).attr("x2", x1).attr("y2", y1);
      ray2.attr("x1", 0).attr("y1", 0).attr("x2", x2).attr("y2", y2);
      place(t1, a, 1.14 * R);
      place(t2, b, 1.14 * R);
      if (svg.node().isConnected && t1.node().getBBox().width && overlap(t1.node().getBBox(), t2.node().getBBox())) {
        place(t2, b, 1.34 * R);  // the two points are close: the second label goes further out
      }
      const turn = k * w, full = 2 * Math.PI;
      // The arc: k w modulo a full turn, anticlockwise for k > 0 (the direction pos moves in).
      const signed = k >= 0 ? turn % full : -((-turn) % full), r = 0.45 * R;
      const [ax, ay] = [r * Math.cos(a), -r * Math.sin(a)], [bx, by] = [r * Math.cos(a + signed), -r * Math.sin(a + signed)];
      arc.attr("d", `M ${ax} ${ay} A ${r} ${r} 0 ${Math.abs(signed) > Math.PI ? 1 : 0} ${signed >= 0 ? 0 : 1} ${bx} ${by}`);
      const pe0 = [Math.cos(a), Math.sin(a)], pek = [Math.cos(b), Math.sin(b)];
      api.data = {dModel: D, base: BASE, i, pos, k, frequency: w, angle: turn, at_pos: pe0, at_pos_k: pek,
        columns: [2 * i + 1, 2 * i]};
      const deg = signed * 180 / Math.PI;
      title.text(`Unit circle with pair ${i} at pos ${pos} and at pos + k = ${pos + k}, ${fmt(deg)} degrees apart`);
      return {brief: `pos + k = ${pos + k}, turned by k·ω = ${fmt(turn)} rad (${fmt(deg)} degrees modulo a turn)`,
        text: `Pair i = ${i}: x = PE[pos, ${2 * i + 1}] = cos(pos·ω), y = PE[pos, ${2 * i}] = sin(pos·ω), ` +
        `angular frequency ω = ${fmt(w)} rad per position, wavelength ${fmt(2 * Math.PI / w)} positions. ` +
        `At pos = ${pos} the point is (${fmt(pe0[0])}, ${fmt(pe0[1])}); at pos + k = ${pos + k} it is ` +
        `(${fmt(pek[0])}, ${fmt(pek[1])}): turned anticlockwise by k·ω = ${fmt(turn)} rad ` +
        `(${fmt(deg)} degrees, modulo a full turn), whatever pos is.`};
    }
    run(null, true);
  }

  function dotFigure(container) {
    const N = 64;
    const chart = lineChart("Dot product against the shift k");
    const heat = heatmapFrame({width: 300, height: 290, margin: {l: 50, r: 8, t: 6, b: 42},
      xLabel: "n", yLabel: "m", label: "Gram matrix of the encodings of positions 0 to 63"});
    heat.canvas.removeAttribute("tabindex");
    heat.canvas.setAttribute("role", "img");
    heat.canvas.removeAttribute("aria-roledescription");
    const bar = colorbar("PE(m)·PE(n)");
    const {area, api, run} = frame(container, "Dot product against the shift", {
      d_model: {label: "d_model (even)", name: "d_model", min: 2, max: 512, step: 2, value: 128},
      base: baseControl,
    }, redraw);
    const gramBox = el("div", {class: "pe-gram-box"},
      el("p", {class: "pe-caption", text: `Gram matrix PE(m)·PE(n), m and n from 0 to ${N - 1} (m down, n across)`}), heat, bar);
    area.append(chart, gramBox);

    function redraw(s) {
      const d = Number(s.d_model), base = Number(s.base);
      const shifts = Array.from({length: 2 * N - 1}, (_, k) => k - (N - 1));
      const curve = shifts.map(k => dotAtDistance(k, d, base));
      chart.draw([{x: shifts, y: curve, name: "PE(m)·PE(m + k), any m", cls: "pe-s1"}],
        "shift k = n − m", "PE(m)·PE(n)", [-d / 2, d / 2],
        `Dot product of two encodings against the shift k, from ${fmt(curve[0])} at k = ${shifts[0]} to ` +
        `${fmt(d / 2)} at k = 0, symmetric`);
      const gram = gramMatrix(N, d, base);
      heat.draw(gram, N, N, d / 2, 0, 0);
      bar.setLimit(d / 2);
      heat.canvas.setAttribute("aria-label", `Gram matrix of ${N} positions: constant along each diagonal ` +
        `n − m, largest (${fmt(d / 2)}) on the main diagonal`);
      api.data = {dModel: d, base, n: N, shifts, curve, gram};
      const min = Math.min(...curve), argmin = shifts[curve.indexOf(min)];
      return {brief: `${fmt(curve[N])} at shift ±1, ${fmt(curve[2 * N - 2])} at ±${N - 1}`,
        text: `Dot product with d_model = ${d}, base = ${integer(base)}: PE(m)·PE(m + k) = sum over the ${d / 2} pairs ` +
        `of cos(k·ω_i), a function of the shift k only, the same for k and −k. ` +
        `It is ${fmt(d / 2)} at k = 0, ${fmt(curve[N])} at k = ±1, ${fmt(curve[2 * N - 2])} at ±${N - 1}; ` +
        `smallest ${fmt(min)} at ±${Math.abs(argmin)} within ±${N - 1}.`};
    }
    run(null, true);
  }

  function ropeFigure(container) {
    const MAX = 256;
    const chart = lineChart("Score against the shift, added encoding and RoPE");
    const {area, api, run} = frame(container, "RoPE against the added encoding", {
      d_head: {label: "d_head (even)", name: "d_head", min: 2, max: 256, step: 2, value: 64},
      base: baseControl,
      m: {label: "query position m", name: "m", min: 0, max: 1000, value: 0},
    }, redraw);
    area.append(chart);

    function redraw(s) {
      const d = Number(s.d_head), base = Number(s.base), m = Number(s.m);
      const {content, added, rope} = ropeScores(MAX, d, base, m);
      const xs = Array.from({length: MAX + 1}, (_, k) => k);
      // A fixed y axis: from -d_head to 2 d_head, the bounds of both scores for any m (|x|^2 =
      // |PE|^2 = d_head / 2), so that a curve that does not change does not move.
      chart.draw([
        {x: xs, y: Array.from(added), name: "added: (x + PE(m))·(x + PE(m + k))", cls: "pe-s1"},
        {x: xs, y: Array.from(rope), name: "RoPE: R(m)x · R(m + k)x", cls: "pe-s2"},
      ], "shift k (query at m, key at n = m + k)", "score q·k", [-d, 2 * d],
      `Scores against the shift 0 to ${MAX}: added encoding from ${fmt(added[0])} to ${fmt(added[MAX])}, ` +
      `RoPE from ${fmt(rope[0])} to ${fmt(rope[MAX])}`);
      api.data = {dHead: d, base, queryPos: m, content, shifts: xs, added, rope};
      return {brief: `added score ${fmt(added[1])} at shift 1 (changes with m), RoPE ${fmt(rope[1])} (the same for every m)`,
        text: `Query at position m = ${m} and key at n = m + k, both with the content x (every coordinate 1/√2), ` +
        `d_head = ${d}, base = ${integer(base)}; the y axis runs from −d_head to 2·d_head, the bounds of both scores. ` +
        `Added encoding: score ${fmt(added[0])} at shift 0, ${fmt(added[1])} at 1, ${fmt(added[MAX])} at ${MAX}; ` +
        `it mixes content and position terms and changes with the query's position m. RoPE: ${fmt(rope[0])} at 0, ` +
        `${fmt(rope[1])} at 1, ${fmt(rope[MAX])} at ${MAX}: a function of the shift alone, the same for every m.`};
    }
    run(null, true);
  }

  function focusFigure(container) {
    const KEYS = 128, BASE = 10000, TOP = 0.35;
    const chart = lineChart("Attention weights of one query over the keys, from position alone");
    const {area, api, run} = frame(container, `Position-only attention (base = ${integer(BASE)})`, {
      d_model: {label: "d_model (even)", name: "d_model", min: 2, max: 512, step: 2, value: 64},
      m: {label: "query position m", name: "m", min: 0, max: KEYS - 1, value: 64},
    }, redraw);
    area.append(chart);

    function redraw(s) {
      const d = Number(s.d_model), m = Number(s.m);
      const {scores, weights} = focusWeights(m, KEYS, d, BASE);
      const xs = Array.from({length: KEYS}, (_, n) => n);
      let near = 0;
      for (let n = Math.max(0, m - 5); n <= Math.min(KEYS - 1, m + 5); n++) near += weights[n];
      // A fixed y axis (0 to 0.35, above the largest weight of any setting) shows how much
      // higher the peak gets as d_model grows.
      chart.draw([{x: xs, y: Array.from(weights), name: "softmax over n of PE(m)·PE(n)/√d_model", cls: "pe-s1"}],
        "key position n", "attention weight", [0, TOP],
        `Weights of a query at m = ${m} over keys 0 to ${KEYS - 1}: ${fmt(weights[m])} on n = m, ` +
        `${fmt(near)} within 5 positions`, m);
      api.data = {dModel: d, base: BASE, m, keys: KEYS, scores, weights, near};
      return {brief: `weight ${fmt(weights[m])} on the query's own position, ${fmt(near)} within 5 positions`,
        text: `A query at position m = ${m} attends to keys at positions 0 to ${KEYS - 1} with the weights ` +
        `softmax over n of PE(m)·PE(n)/√d_model (d_model = ${d}, positions only, no content). ` +
        `The key at n = m gets ${fmt(weights[m])} (uniform would be ${fmt(1 / KEYS)}); the keys within 5 positions ` +
        `of m get ${fmt(near)} of the weight together. Wider encodings set nearby positions further apart ` +
        `in score from distant ones, so the softmax focuses more sharply on them.`};
    }
    run(null, true);
  }

  const FIGURES = {table: tableFigure, rotation: rotationFigure, dot: dotFigure, rope: ropeFigure,
    focus: focusFigure};

  window.posencExplorer = {angularFrequency, columnInfo, columnOf, encodingTable, encodingRow,
    dotAtDistance, gramMatrix, rotate, ropeScores, focusWeights, pixelBlocks, FIGURES: Object.keys(FIGURES)};

  function start() {
    for (const container of document.querySelectorAll(".posenc-explorer[data-figure]")) {
      const make = FIGURES[container.dataset.figure];
      if (make && !container.posencExplorer) make(container);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
