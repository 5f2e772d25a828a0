/* posenc-explorer-draw.js: what the course's interactive figures (posenc-explorer.js) are
 * drawn with: d3 axes whose tick labels never collide (as many ticks as fit, numbers in full or
 * with an SI prefix, margins that follow the labels), heatmaps painted on a canvas at the
 * display's resolution (rows through a low-pass filter: no false stripes), line charts, colour
 * bars, the controls and the frame of a figure. Scales, ticks and axes come from d3 (d3-scale,
 * d3-axis, d3-selection, d3-format: the global `d3` of posenc-explorer-d3.js, which
 * book/_ext/posenc_explorer.py copies from node_modules); the colour map (matplotlib's RdBu_r,
 * the one of posenc.plot) from posenc-explorer-colormap.js, which the Sphinx extension writes
 * at build time. Exported as window.posencExplorerDraw.
 */
(function () {
  "use strict";


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

  // --- axes whose labels fit ------------------------------------------------------------------

  const ruler = document.createElement("canvas").getContext("2d"), measured = new Map();

  /** The font of an SVG text node as its CSS sets it: {font, size}, the size in the SVG's user
   * units (the charts are drawn in user units and scaled to the page). */
  function fontOf(node) {
    const style = getComputedStyle(node), size = parseFloat(style.fontSize) || 15;
    return {font: `${style.fontStyle} ${style.fontWeight} ${size}px ${style.fontFamily}`, size};
  }

  /** The advance width of text in a font, in the font's units (the canvas's measureText). */
  function textWidth(font, text) {
    const key = `${font}|${text}`;
    if (!measured.has(key)) {
      ruler.font = font;
      measured.set(key, ruler.measureText(text).width);
    }
    return measured.get(key);
  }

  /** d3's SI format with as many significant digits as the values need to print exactly:
   * 1,000,200 as "1.0002M", 250 as "250". */
  function exactSI(values) {
    let digits = 1;
    for (const v of values) while (digits < 15 && Number(v.toPrecision(digits)) !== v) digits++;
    return d3.format(`.${digits}~s`);
  }

  /** The most of d3's nice ticks, scale.ticks(n) with n from the axis length down, whose labels
   * in `font` stay inside [lo, hi] along the axis (labels that would leave it are dropped) and
   * keep a gap from each other (0.8 of the font size across, 0.6 of it up and down).
   * makeFormat(values, n) gives the labels' format. Returns {values, format, width}: the
   * widest label's width. */
  function fitTicks(scale, font, makeFormat, {vertical, integers, lo, hi}) {
    const size = font.size, [a, b] = scale.range(), length = Math.abs(b - a);
    const gap = vertical ? 0.6 * size : 0.8 * size;
    for (let n = Math.max(1, Math.floor(length / (vertical ? 1.4 : 2.5) / size)); n >= 1; n--) {
      let values = scale.ticks(n);
      if (integers) values = values.filter(Number.isInteger);
      const format = makeFormat(values, n), kept = [];
      for (const v of values) {
        const label = format(v), half = (vertical ? size : textWidth(font.font, label)) / 2, at = scale(v);
        if (at - half >= lo && at + half <= hi) kept.push({v, start: at - half, end: at + half, label});
      }
      kept.sort((p, q) => p.start - q.start);
      if (kept.every((t, k) => k === 0 || t.start - kept[k - 1].end >= gap) && (kept.length || n === 1)) {
        kept.sort((p, q) => p.v - q.v);
        return {values: kept.map(t => t.v), format,
          width: Math.max(0, ...kept.map(t => textWidth(font.font, t.label)))};
      }
    }
    return {values: [], format: makeFormat([], 1), width: 0};
  }

  /** Ticks of an axis whose labels never collide (fitTicks). Integers (positions, columns) are
   * printed exactly: in full (1,000,200) where that leaves at least 3 ticks, or as many as the
   * short form, and (vertical axes) labels no wider than `wide`; else with d3's SI prefix
   * (1.0002M). Other values: d3's format for the tick step. */
  function fitAxis(scale, font, {vertical = false, integers = false, lo, hi, wide = Infinity}) {
    const options = {vertical, integers, lo, hi};
    if (!integers) return fitTicks(scale, font, (values, n) => scale.tickFormat(n), options);
    const full = fitTicks(scale, font, () => integer, options);
    if (full.values.length >= 3 && full.width <= wide) return full;
    const short = fitTicks(scale, font, exactSI, options);
    return short.values.length > full.values.length || (full.width > wide && short.width < full.width) ? short : full;
  }

  /** Room for an axis's labels and title (user units, font size `size`): below a horizontal
   * axis, tick (6) and padding (3), the labels' line, a gap, the title's line; beside a
   * vertical one, the widest label instead of a line. */
  function axisRoom(size, labelWidth) {
    const gap = 0.4 * size;
    return {bottom: Math.ceil(11 + 2.35 * size), left: Math.ceil(10 + labelWidth + gap + 1.02 * size),
      // The title's baseline below the axis, and its (rotated) baseline left of a vertical axis.
      xTitle: 9 + 2.1 * size, yTitle: 9 + labelWidth + gap + 0.22 * size};
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
   * covers (the heatmaps' columns). */
  function pixelBlocks(pixels, cells) {
    const first = new Int32Array(pixels), end = new Int32Array(pixels);
    for (let p = 0; p < pixels; p++) {
      first[p] = Math.floor((p * cells) / pixels);
      end[p] = Math.max(first[p] + 1, Math.floor(((p + 1) * cells) / pixels));
    }
    return {first, end};
  }

  /** Width of the low-pass filter of the heatmaps' rows, in pixel rows: the standard deviation
   * of its Gaussian weights. Its response to a wavelength of L pixel rows is
   * exp(-2 (pi SIGMA / L)^2): 0.04 at two pixel rows (the shortest wavelength a column of pixels
   * can show), below 0.001 at 1.5 rows, 0.45 at four rows. */
  const ROW_SIGMA = 0.8;

  /** The rows each of `pixels` pixel rows shows of `cells` rows, and their weights: with more
   * pixel rows than rows, the one row it lies in (rows drawn as blocks); with fewer (rho = cells
   * / pixels rows per pixel row), a low-pass filter, not a box: the mean of the rows within
   * 3 sigma of the pixel row's centre (p + 0.5) rho - 0.5, weighted by the Gaussian
   * exp(-(r - centre)^2 / (2 sigma^2)), sigma = ROW_SIGMA rho, the weights normalised to sum 1.
   * A box (the plain mean of the rows a pixel covers) lets wavelengths of one to two pixel
   * rows through at up to 0.6 of their amplitude, as false stripes of a longer period; this
   * filter fades them to the column's mean. Returns {first, end, weights, offsets}: pixel row
   * p shows rows first[p] .. end[p] - 1 with weights[offsets[p] + r - first[p]]. */
  function rowFilter(pixels, cells) {
    if (pixels >= cells) {
      const {first, end} = pixelBlocks(pixels, cells);
      return {first, end, weights: new Float64Array(pixels).fill(1), offsets: Int32Array.from(first, (_, p) => p)};
    }
    const rho = cells / pixels, sigma = ROW_SIGMA * rho, reach = 3 * sigma;
    const first = new Int32Array(pixels), end = new Int32Array(pixels), offsets = new Int32Array(pixels + 1);
    for (let p = 0; p < pixels; p++) {
      const centre = (p + 0.5) * rho - 0.5;
      first[p] = Math.max(0, Math.ceil(centre - reach));
      end[p] = Math.min(cells, Math.floor(centre + reach) + 1);
      offsets[p + 1] = offsets[p] + end[p] - first[p];
    }
    const weights = new Float64Array(offsets[pixels]);
    for (let p = 0; p < pixels; p++) {
      const centre = (p + 0.5) * rho - 0.5;
      let total = 0;
      for (let r = first[p]; r < end[p]; r++) total += (weights[offsets[p] + r - first[p]] = Math.exp(-((r - centre) ** 2) / (2 * sigma * sigma)));
      for (let k = offsets[p]; k < offsets[p + 1]; k++) weights[k] /= total;
    }
    return {first, end, weights, offsets};
  }

  /** Paint values (row-major, rows x cols) over the whole canvas at its own resolution (the
   * displayed size times devicePixelRatio), mapping [-limit, limit] onto the colour map: each
   * pixel row shows the rows of rowFilter (low-pass), each pixel the mean of the columns it
   * covers (pixelBlocks). */
  function paint(canvas, values, rows, cols, limit) {
    LUT = LUT || colormap();
    const W = canvas.width, H = canvas.height, ctx = canvas.getContext("2d");
    if (!canvas.peImage || canvas.peImage.width !== W || canvas.peImage.height !== H) {
      canvas.peImage = ctx.createImageData(W, H);
    }
    const words = new Uint32Array(canvas.peImage.data.buffer);
    const rf = rowFilter(H, rows), cb = pixelBlocks(W, cols), scale = 127.5 / limit;
    const mean = new Float64Array(cols);
    for (let py = 0; py < H; py++) {
      mean.fill(0);
      for (let r = rf.first[py], k = rf.offsets[py]; r < rf.end[py]; r++, k++) {
        const wr = rf.weights[k];
        for (let c = 0, at = r * cols; c < cols; c++) mean[c] += wr * values[at + c];
      }
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
   * same proportions that holds the axes (integer ticks of rows and columns, as many as fit),
   * the frame and a cursor (the outline of the cell the keyboard or the pointer reads). The
   * margins follow the labels (axisRoom); `square`: the plot area is square, the SVG's height
   * follows its width. */
  function heatmapFrame({width, height, margin, xLabel, yLabel, label, square}) {
    const W = width, M = margin;
    let H = height, g = {l: M.l, t: M.t, pw: W - M.l - M.r, ph: H - M.t - M.b};
    const canvas = el("canvas", {class: "pe-heatmap", tabindex: "0", role: "application",
      "aria-roledescription": "heatmap", "aria-label": label, width: g.pw, height: g.ph});
    const svg = d3.create("svg").attr("viewBox", `0 0 ${W} ${H}`).attr("class", "pe-heatmap-axes")
      .attr("aria-hidden", "true");
    const frameRect = svg.append("rect").attr("class", "pe-frame");
    const xAxis = svg.append("g").attr("class", "pe-axis pe-x");
    const yAxis = svg.append("g").attr("class", "pe-axis pe-y");
    const xTitle = svg.append("text").attr("class", "pe-axis-label").attr("text-anchor", "middle").text(xLabel);
    const yTitle = svg.append("text").attr("class", "pe-axis-label").attr("text-anchor", "middle").text(yLabel);
    const cursor = svg.append("rect").attr("class", "pe-cursor").attr("visibility", "hidden");
    const box = el("div", {class: "pe-heatmap-frame"}, canvas, svg.node());
    let last = null;

    function fit() {
      const rect = canvas.getBoundingClientRect(), ratio = window.devicePixelRatio || 1;
      const w = Math.max(1, Math.round((rect.width || g.pw) * ratio)), h = Math.max(1, Math.round((rect.height || g.ph) * ratio));
      if (canvas.width !== w) canvas.width = w;
      if (canvas.height !== h) canvas.height = h;
    }
    box.draw = function (values, rows, cols, limit, rowStart, colStart) {
      const font = fontOf(xTitle.node()), size = font.size, top = Math.max(M.t, Math.ceil(0.6 * size));
      const bottom = axisRoom(size, 0).bottom;
      const yFor = (h) => d3.scaleLinear([rowStart - 0.5, rowStart + rows - 0.5], [top, h - bottom]);
      // The y axis's labels set the left margin; a square plot sets the height from the width.
      let yFit = fitAxis(yFor(H), font, {vertical: true, integers: true, lo: 0, hi: H, wide: 0.12 * W});
      let room = axisRoom(size, yFit.width);
      if (square) {
        const h = top + (W - room.left - M.r) + bottom;
        if (h !== H) {
          H = h;
          svg.attr("viewBox", `0 0 ${W} ${H}`);
          yFit = fitAxis(yFor(H), font, {vertical: true, integers: true, lo: 0, hi: H, wide: 0.12 * W});
          room = axisRoom(size, yFit.width);
        }
      }
      g = {l: room.left, t: top, pw: W - room.left - M.r, ph: H - top - bottom};
      const y = yFor(H), x = d3.scaleLinear([colStart - 0.5, colStart + cols - 0.5], [g.l, W - M.r]);
      const xFit = fitAxis(x, font, {integers: true, lo: 0, hi: W});
      Object.assign(canvas.style, {left: `${(100 * g.l) / W}%`, top: `${(100 * g.t) / H}%`,
        width: `${(100 * g.pw) / W}%`, height: `${(100 * g.ph) / H}%`});
      frameRect.attr("x", g.l).attr("y", g.t).attr("width", g.pw).attr("height", g.ph);
      xAxis.attr("transform", `translate(0,${H - bottom})`)
        .call(d3.axisBottom(x).tickValues(xFit.values).tickFormat(xFit.format));
      yAxis.attr("transform", `translate(${g.l},0)`)
        .call(d3.axisLeft(y).tickValues(yFit.values).tickFormat(yFit.format));
      xTitle.attr("x", g.l + g.pw / 2).attr("y", H - bottom + room.xTitle);
      yTitle.attr("transform", `translate(${g.l - room.yTitle},${g.t + g.ph / 2}) rotate(-90)`);
      last = {values, rows, cols, limit};
      box.scales = {x, y};
      fit();
      paint(canvas, values, rows, cols, limit);
    };
    /** Outline cell (r, c) of the drawn values (at least 6 units wide, so that it shows). */
    box.showCursor = function (r, c) {
      if (!last) return;
      const cw = g.pw / last.cols, ch = g.ph / last.rows, w = Math.max(cw, 6), h = Math.max(ch, 6);
      cursor.attr("x", g.l + (c + 0.5) * cw - w / 2).attr("y", g.t + (r + 0.5) * ch - h / 2)
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

  /** A line chart in SVG with d3 scales and axes: series [{x, y, name, cls}], x integers. The
   * ticks are as many as fit without collisions (fitAxis), the margins follow the labels. */
  function lineChart(title, height) {
    const W = 640, H = height || 240, M = {r: 14, t: 10};
    const svg = d3.create("svg").attr("viewBox", `0 0 ${W} ${H}`).attr("class", "pe-chart").attr("role", "img");
    const label = svg.append("title").text(title);
    const frameRect = svg.append("rect").attr("class", "pe-frame");
    const zero = svg.append("line").attr("class", "pe-zero");
    const xAxis = svg.append("g").attr("class", "pe-axis pe-x");
    const yAxis = svg.append("g").attr("class", "pe-axis pe-y");
    const xTitle = svg.append("text").attr("class", "pe-axis-label").attr("text-anchor", "middle");
    const yTitle = svg.append("text").attr("class", "pe-axis-label").attr("text-anchor", "middle");
    const marks = svg.append("g"), lines = svg.append("g");
    const legend = el("div", {class: "pe-legend", "aria-hidden": "true"});
    const box = el("div", {class: "pe-chart-box"}, svg.node(), legend);
    /** yDomain: fixed [low, high], or null for d3's nice extent of the values. marks: x
     * values where a vertical line is drawn (class pe-mark). */
    box.draw = function (series, xLabel, yLabel, yDomain, description, markAt) {
      const font = fontOf(xTitle.node()), size = font.size, top = Math.max(M.t, Math.ceil(0.6 * size));
      const bottom = axisRoom(size, 0).bottom;
      const xs = series[0].x, first = xs[0], last = xs[xs.length - 1];
      let y;
      if (yDomain) {
        y = d3.scaleLinear(yDomain, [H - bottom, top]);
      } else {
        let lo = Infinity, hi = -Infinity;
        for (const s of series) for (const v of s.y) { if (v < lo) lo = v; if (v > hi) hi = v; }
        if (hi - lo < 1e-12) { lo -= 1; hi += 1; }
        y = d3.scaleLinear([lo, hi], [H - bottom, top]).nice();
      }
      const yFit = fitAxis(y, font, {vertical: true, lo: 0, hi: H}), room = axisRoom(size, yFit.width);
      // One point: half a position either side of it.
      const x = d3.scaleLinear(last === first ? [first - 0.5, first + 0.5] : [first, last], [room.left, W - M.r]);
      const xFit = fitAxis(x, font, {integers: true, lo: 0, hi: W});
      frameRect.attr("x", room.left).attr("y", top).attr("width", W - M.r - room.left).attr("height", H - bottom - top);
      xAxis.attr("transform", `translate(0,${H - bottom})`)
        .call(d3.axisBottom(x).tickValues(xFit.values).tickFormat(xFit.format));
      yAxis.attr("transform", `translate(${room.left},0)`)
        .call(d3.axisLeft(y).tickValues(yFit.values).tickFormat(yFit.format));
      const [ya, yb] = y.domain();
      zero.attr("visibility", ya < 0 && yb > 0 ? "visible" : "hidden").attr("x1", room.left).attr("x2", W - M.r)
        .attr("y1", y(0)).attr("y2", y(0));
      xTitle.text(xLabel).attr("x", (room.left + W - M.r) / 2).attr("y", H - bottom + room.xTitle);
      yTitle.text(yLabel).attr("transform", `translate(${room.left - room.yTitle},${(top + H - bottom) / 2}) rotate(-90)`);
      marks.selectAll("line").data(markAt === undefined ? [] : [markAt]).join("line").attr("class", "pe-mark")
        .attr("x1", v => x(v)).attr("x2", v => x(v)).attr("y1", top).attr("y2", H - bottom);
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
    // The charts' text is larger on a phone (posenc-explorer.css): turning the phone changes it,
    // and with it the room the labels need.
    const narrow = window.matchMedia ? window.matchMedia("(max-width: 575.98px)") : null;
    if (narrow && narrow.addEventListener) narrow.addEventListener("change", () => run(null, true));
    const api = {figure: container.dataset.figure, state, controls, data: {}, redraw: () => run(null, true),
      lastRedrawMs: 0, timings: {}, announced: "", pending: null, announce};
    container.posencExplorer = api;
    return {area, api, run, controls};
  }

  window.posencExplorerDraw = {d3, el, fmt, integer, nextId: () => `pe-${++uid}`, colorbar, heatmapFrame,
    lineChart, frame, baseControl, pixelBlocks, rowFilter, ROW_SIGMA};
})();
