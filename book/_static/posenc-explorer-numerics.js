/* posenc-explorer-numerics.js: the numbers of the course's interactive figures
 * (posenc-explorer.js), computed in the reader's browser.
 *
 * No kernel, no network: the numbers come from the formula of Vaswani et al. 2017,
 * "Attention Is All You Need", section 3.5, in float64 (JavaScript numbers), as in the Python
 * package posenc:
 *
 *     w_i = base ** (-2 i / d_model)          angular frequency of pair i, radians per position
 *     PE[pos, 2i] = sin(pos w_i),  PE[pos, 2i + 1] = cos(pos w_i)      (interleaved layout)
 *
 * and RoPE from Su et al. 2021, RoFormer, section 3.2 (pair i rotated by the angle pos w_i).
 * tests/test_explore.py compares every number below with posenc in float64. The pure
 * functions are window.posencExplorer's.
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

  window.posencExplorer = {angularFrequency, columnInfo, columnOf, encodingTable, encodingRow,
    dotAtDistance, gramMatrix, rotate, ropeScores, focusWeights};
})();
