/* posenc-explorer.js: the course's interactive figures, computed in the reader's browser.
 *
 * No kernel, no network: the numbers come from posenc-explorer-numerics.js (the formula, in
 * float64, as in the Python package posenc), the axes, heatmaps, charts and controls from
 * posenc-explorer-draw.js (on d3).
 *
 * The book's directive ```{posenc-explorer} NAME``` (book/_ext/posenc_explorer.py) writes
 * <div class="posenc-explorer" data-figure="NAME"> holding a how-to line (screen), a line for
 * print and a still image (hidden on screen, fetched once the page is idle, for print); this
 * file adds the live figure:
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
 */
(function () {
  "use strict";


  const {angularFrequency, columnInfo, columnOf, encodingTable, dotAtDistance, gramMatrix, ropeScores,
    focusWeights} = window.posencExplorer;
  const {d3, el, fmt, integer, nextId, colorbar, heatmapFrame, lineChart, frame, baseControl, pixelBlocks,
    rowFilter, ROW_SIGMA} = window.posencExplorerDraw;

  // --- the five figures -------------------------------------------------------------------------

  function tableFigure(container) {
    const MAX_LEN = 1024, MAX_WIDTH = 512;  // the sliders' limits
    const buffer = new Float64Array(MAX_LEN * MAX_WIDTH);
    const heat = heatmapFrame({width: 640, height: 270, margin: {l: 66, r: 10, t: 6, b: 42},
      xLabel: "column j", yLabel: "position pos", label: "Heatmap of the encoding table"});
    const canvas = heat.canvas;
    const help = el("p", {class: "pe-caption", id: `${nextId()}-help`,
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
      if (key !== drawnKey || !changed) {  // the pair alone changes only the line plot
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
        (rowsPerPixel > 1 ? `The heatmap has ${canvas.height} pixel rows for ${n} positions ` +
          `(${fmt(rowsPerPixel, 3)} per pixel row): each pixel row shows the positions around it through ` +
          `a low-pass filter, so a column whose wavelength is shorter than two pixel rows ` +
          `(${fmt(2 * rowsPerPixel, 3)} positions) fades to its mean instead of showing false stripes. ` : "") +
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
    const PAD = 2;
    const boxOf = node => { const b = node.getBBox(); return {x0: b.x - PAD, y0: b.y, x1: b.x + b.width + PAD, y1: b.y + b.height}; };
    const overlap = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
    /** Move the point labels apart and into the frame: each label, at its place outside the
     * circle, is shifted into the frame (the tick labels and titles are outside it) and then,
     * if it covers a point or a label placed before it, one line up or down at a time (away
     * from the centre first) until it covers none. Needs the labels rendered (getBBox). */
    function separate(labels, angles) {
      const obstacles = [boxOf(p1.node()), boxOf(p2.node())], inside = F - PAD;
      labels.forEach((label, k) => {
        const b = boxOf(label.node()), line = b.y1 - b.y0, away = Math.sin(angles[k]) > 0 ? -1 : 1;
        const dx = Math.min(0, inside - b.x1) + Math.max(0, -inside - b.x0);
        for (const step of [0, 1, -1, 2, -2, 3, -3]) {
          let dy = step * away * line;
          dy += Math.min(0, inside - (b.y1 + dy)) + Math.max(0, -inside - (b.y0 + dy));
          const moved = {x0: b.x0 + dx, x1: b.x1 + dx, y0: b.y0 + dy, y1: b.y1 + dy};
          if (!obstacles.some(o => overlap(moved, o)) || step === -3) {
            label.attr("x", Number(label.attr("x")) + dx).attr("y", Number(label.attr("y")) + dy);
            obstacles.push(moved);
            break;
          }
        }
      });
    }

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
      if (svg.node().isConnected && t1.node().getBBox().width) separate([t1, t2], [a, b]);
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
    const heat = heatmapFrame({width: 300, height: 290, margin: {l: 50, r: 8, t: 6, b: 42}, square: true,
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

  Object.assign(window.posencExplorer, {pixelBlocks, rowFilter, ROW_SIGMA, FIGURES: Object.keys(FIGURES)});

  /** Fetch the still images for print (each figure's <picture>: its source for the screen, an
   * empty inline image, is removed, so the <img> loads its PNG while it stays hidden on screen).
   * A browser prints what is loaded and does not wait for an image that print media asks for:
   * fetched once the page is idle, after the live figures and the page's own content, the
   * images are there when a reader prints. Also on "beforeprint", for a print before that. */
  function fetchStills() {
    for (const source of document.querySelectorAll(".posenc-explorer picture.posenc-explorer-static source")) {
      source.remove();
    }
  }

  function start() {
    for (const container of document.querySelectorAll(".posenc-explorer[data-figure]")) {
      const make = FIGURES[container.dataset.figure];
      if (make && !container.posencExplorer) make(container);
    }
    const whenIdle = () => (window.requestIdleCallback ? requestIdleCallback(fetchStills, {timeout: 2000})
      : setTimeout(fetchStills, 200));
    if (document.readyState === "complete") whenIdle();
    else window.addEventListener("load", whenIdle, {once: true});
    window.addEventListener("beforeprint", fetchStills, {once: true});
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();