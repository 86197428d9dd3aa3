/* fairgate what-if threshold explorer: plain JavaScript, no library, no network.
 *
 * The page's data (script#fairgate-explorer-data) holds, per slicing, a sorted grid of raw scores and per group
 * the weight of favourable ("positive") and unfavourable ("negative") truths at each score. A threshold t gives
 * predicted label 1 to every score >= t (the rule of columns.decision_threshold); the selection is the favourable
 * decision, so with favourable label 0 the selected are the scores below t.
 *
 * Contract (window.fairgateExplorer):
 *   slicings()                      slicing labels, e.g. "race", "race × sex"
 *   groups(slicing)                 group names of a slicing (values joined with " × ")
 *   setThreshold(slicing, group, t) move one group's threshold (number in [0, 1]); returns its new state
 *   setAll(slicing, t)              one threshold for every group of the slicing
 *   state(slicing)                  {groups: {<group>: {n, threshold, selection_rate, true_positive_rate,
 *                                    false_positive_rate, positive_predictive_value, false_negative_rate, accuracy,
 *                                    intervals: {<rate>: [low, high]}}}, summaries: {<metric>: {value, threshold,
 *                                    direction, passes}}, accuracy, start_accuracy, accuracy_change}
 *   at(slicing, t)                  the same state with every group at threshold t (the page is not changed)
 *   fitted(slicing)                 the fitted group thresholds (frontier points, each with its page thresholds), or null
 *   applyFitted(slicing, k)         set the fitted groups' thresholds to point k of fitted(slicing).points
 *   frontierPoint(slicing)          {gap, accuracy} of the page's thresholds over the fitted groups
 * Undefined rates (a zero denominator) are null. Shown numbers follow the report's formatter: three decimals,
 * interval ends rounded outward and joined "a–b"; metrics are named in words (DATA.labels).
 */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("fairgate-explorer-data").textContent);
  var RATES = ["selection_rate", "true_positive_rate", "false_positive_rate", "positive_predictive_value",
    "false_negative_rate", "accuracy"];
  var SHORT = {selection_rate: "selection", true_positive_rate: "TPR", false_positive_rate: "FPR",
    positive_predictive_value: "PPV", false_negative_rate: "FNR", accuracy: "accuracy"};
  var FAVOURABLE_ONE = DATA.favorable_label === 1;
  var Z = DATA.z;

  function prefix(values) {
    var out = new Float64Array(values.length + 1);
    for (var i = 0; i < values.length; i++) { out[i + 1] = out[i] + values[i]; }
    return out;
  }

  function prepare(slicing) {
    var groups = {};
    var order = [];
    slicing.groups.forEach(function (g) {
      var pos = prefix(g.positive), neg = prefix(g.negative);
      groups[g.name] = {name: g.name, sufficient: g.sufficient, pos: pos, neg: neg,
        P: pos[pos.length - 1], N: neg[neg.length - 1], threshold: DATA.start_threshold, cache: null};
      if (g.positive_sq) {  // weighted: sums of squared weights, for Kish's effective sizes
        var posSq = prefix(g.positive_sq), negSq = prefix(g.negative_sq);
        groups[g.name].posSq = posSq;
        groups[g.name].negSq = negSq;
      }
      order.push(g.name);
    });
    return {data: slicing, scores: slicing.scores, groups: groups, order: order, start: null, states: null, page: 0};
  }

  var SLICINGS = {};
  var LABELS = [];
  DATA.slicings.forEach(function (s) { SLICINGS[s.label] = prepare(s); LABELS.push(s.label); });

  // The first index whose score is >= t (scores ascending): everything from there on is predicted label 1.
  function firstAtOrAbove(scores, t) {
    var lo = 0, hi = scores.length;
    while (lo < hi) {
      var mid = (lo + hi) >>> 1;
      if (scores[mid] >= t) { hi = mid; } else { lo = mid + 1; }
    }
    return lo;
  }

  function fraction(num, den) { return den > 0 ? num / den : null; }

  function wilson(successes, trials) {
    if (!(trials > 0)) { return null; }
    var p = successes / trials, z2 = Z * Z;
    var denominator = 1 + z2 / trials;
    var centre = (p + z2 / (2 * trials)) / denominator;
    var half = Z * Math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator;
    return [Math.min(1, Math.max(0, centre - half)), Math.min(1, Math.max(0, centre + half))];
  }

  // The engine's weighted interval (fairgate/engine/counts.py, effective_fraction): the weighted proportion times
  // Kish's effective size (sum w)^2 / sum w^2 of the denominator's rows, out of that size.
  function interval(successes, trials, squares) {
    if (squares === null) { return wilson(successes, trials); }
    var size = squares > 0 ? trials * trials / squares : 0;
    return wilson(trials > 0 ? successes / trials * size : 0, size);
  }

  // Favourable decision = score >= t when the favourable label is 1, score < t when it is 0.
  function decided(total, below) { return FAVOURABLE_ONE ? total - below : below; }

  function groupState(s, g, t) {
    var i = firstAtOrAbove(s.scores, t);
    var tp = decided(g.P, g.pos[i]);  // favourable truth, favourable decision
    var fp = decided(g.N, g.neg[i]);
    var fn = g.P - tp, tn = g.N - fp, n = g.P + g.N;
    var parts = {
      selection_rate: [tp + fp, n], true_positive_rate: [tp, tp + fn], false_positive_rate: [fp, fp + tn],
      positive_predictive_value: [tp, tp + fp], false_negative_rate: [fn, tp + fn], accuracy: [tp + tn, n]
    };
    var squares = {}, size = n;
    if (g.posSq) {
      var pSq = g.posSq[g.posSq.length - 1], nSq = g.negSq[g.negSq.length - 1];
      var tpSq = decided(pSq, g.posSq[i]), fpSq = decided(nSq, g.negSq[i]);
      squares = {selection_rate: pSq + nSq, accuracy: pSq + nSq, true_positive_rate: pSq, false_negative_rate: pSq,
        false_positive_rate: nSq, positive_predictive_value: tpSq + fpSq};
      size = pSq + nSq > 0 ? n * n / (pSq + nSq) : 0;  // the document's n: Kish's effective size under weights
    }
    var out = {n: size, threshold: t, intervals: {}, correct: tp + tn, total: n};
    RATES.forEach(function (r) {
      out[r] = fraction(parts[r][0], parts[r][1]);
      out.intervals[r] = interval(parts[r][0], parts[r][1], g.posSq ? squares[r] : null);
    });
    return out;
  }

  function summarise(kind, values) {
    var defined = values.filter(function (v) { return v !== null && isFinite(v); });
    if (defined.length < 2) { return null; }
    var high = Math.max.apply(null, defined), low = Math.min.apply(null, defined);
    if (kind === "difference") { return high - low; }
    return high > 0 ? low / high : null;
  }

  // The policy's summaries over the sufficient groups shown (the audit judges sufficient groups only).
  function summaries(s, states) {
    var out = {};
    var judged = s.order.filter(function (name) { return s.groups[name].sufficient; });
    DATA.summaries.forEach(function (m) {
      var each = m.bases.map(function (base) {
        return summarise(m.summary, judged.map(function (name) { return states[name][base]; }));
      });
      var value = null;
      if (each.every(function (v) { return v !== null; })) {
        value = m.summary === "difference" ? Math.max.apply(null, each) : Math.min.apply(null, each);
      }
      var passes = value === null ? null :
        (m.direction === "lower_is_better" ? value <= m.threshold : value >= m.threshold);
      out[m.metric] = {value: value, threshold: m.threshold, direction: m.direction, passes: passes};
    });
    return out;
  }

  function overall(s, states) {
    var correct = 0, n = 0;
    s.order.forEach(function (name) { correct += states[name].correct; n += states[name].total; });
    return fraction(correct, n);
  }

  function publicGroup(st) {
    var out = {n: st.n, threshold: st.threshold, intervals: st.intervals};
    RATES.forEach(function (r) { out[r] = st[r]; });
    return out;
  }

  function stateWith(s, thresholdOf) {
    var states = {}, groups = {};
    s.order.forEach(function (name) {
      states[name] = groupState(s, s.groups[name], thresholdOf(name));
      groups[name] = publicGroup(states[name]);
    });
    if (s.start === null) {
      var startStates = {};
      s.order.forEach(function (name) {
        startStates[name] = groupState(s, s.groups[name], DATA.start_threshold);
      });
      s.start = overall(s, startStates);
    }
    var accuracy = overall(s, states);
    return {groups: groups, summaries: summaries(s, states), accuracy: accuracy, start_accuracy: s.start,
      accuracy_change: accuracy === null || s.start === null ? null : accuracy - s.start, _states: states};
  }

  function slicingOf(label) {
    var s = SLICINGS[label];
    if (!s) { throw new Error("no slicing " + JSON.stringify(label) + "; slicings: " + LABELS.join(", ")); }
    return s;
  }

  function checkedThreshold(t) {
    var value = Number(t);
    if (!isFinite(value)) { throw new Error("threshold must be a number, not " + JSON.stringify(t)); }
    return value;
  }

  // Each group's state at its own threshold, kept and updated one group at a time (a change costs one group's
  // counts plus the summaries over the kept states, whatever the number of groups).
  function keptStates(s) {
    if (s.states === null) {
      s.states = {};
      s.order.forEach(function (name) { s.states[name] = groupState(s, s.groups[name], s.groups[name].threshold); });
    }
    return s.states;
  }

  function currentState(label) {
    var s = slicingOf(label);
    var states = keptStates(s), groups = {};
    s.order.forEach(function (name) { groups[name] = publicGroup(states[name]); });
    if (s.start === null) { stateWith(s, function () { return DATA.start_threshold; }); }
    var accuracy = overall(s, states);
    return {groups: groups, summaries: summaries(s, states), accuracy: accuracy, start_accuracy: s.start,
      accuracy_change: accuracy === null || s.start === null ? null : accuracy - s.start, _states: states};
  }

  /* ---------- the page ---------- */

  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"}[c];
    });
  }

  // The report's one formatter (fairgate/report/format.py), on the number's shortest decimal form as Python's
  // repr gives it: a value rounded half away from zero to three decimals ("fmt"), an interval's ends rounded
  // outward ("fmt_bound") and joined by an en dash, or by " to " when an end is negative; U+2212 for minus.
  var MINUS = "\u2212";

  function rounded(v, mode) {  // mode: "half"; "up" / "down" (towards +/- infinity)
    var negative = v < 0, magnitude = Math.abs(v), k, away;
    var parts = /^(\d+)(?:\.(\d+))?$/.exec(String(magnitude));
    if (parts) {
      var decimals = parts[2] || "", tail = decimals.slice(3);
      k = Number(parts[1]) * 1000 + Number((decimals + "000").slice(0, 3));
      away = mode === "half" ? tail.charAt(0) >= "5" : /[1-9]/.test(tail) && (mode === "up") !== negative;
    } else {  // exponent form: a magnitude under 1e-6 (rates are never huge)
      k = Math.floor(magnitude * 1000);
      away = mode !== "half" && magnitude * 1000 > k && (mode === "up") !== negative;
    }
    k += away ? 1 : 0;
    var text = (k / 1000).toFixed(3);
    return negative && k > 0 ? MINUS + text : text;
  }

  function fmt(v) { return v === null || !isFinite(v) ? "–" : rounded(v, "half"); }

  function fmtInterval(iv) {
    if (iv === null) { return ""; }
    var low = rounded(iv[0], "down"), high = rounded(iv[1], "up");
    return low + ((low + high).indexOf(MINUS) >= 0 ? " to " : "–") + high;
  }

  // fmt_count: a head count rounded, with thousands separators.
  function count(n) { return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  function label(name) { return (DATA.labels && DATA.labels[name]) || name; }

  var current = null;  // the slicing on show
  var PAGE = 100;  // groups per page of the table: the page stays light with thousands of groups

  function rateCells(st) {
    return RATES.map(function (r) {
      return "<td class=\"num\" data-rate=\"" + r + "\">" + fmt(st[r]) + "<br><small>" + fmtInterval(st.intervals[r]) +
        "</small></td>";
    }).join("");
  }

  function groupRow(s, name, index, st) {
    var g = s.groups[name];
    var t = g.threshold;
    return "<tr data-index=\"" + index + "\"><th scope=\"row\">" + esc(name) +
      (g.sufficient ? "" : " <small title=\"under min_group_size: not judged\">(not judged)</small>") + "</th>" +
      "<td class=\"thr-cell\"><input type=\"range\" class=\"slider\" min=\"0\" max=\"1\" step=\"0.01\" value=\"" + t +
      "\" aria-label=\"threshold of " + esc(name) + "\"> <input type=\"number\" class=\"thr\" min=\"0\" max=\"1\" " +
      "step=\"any\" value=\"" + t + "\" aria-label=\"threshold value of " + esc(name) + "\"></td>" +
      "<td class=\"num\">" + count(st.n) + "</td>" + rateCells(st) + "</tr>";
  }

  function summaryRows(sums) {
    return DATA.summaries.map(function (m) {
      var v = sums[m.metric];
      var cls = v.passes === null ? "undefined" : (v.passes ? "pass" : "fail");
      var word = v.passes === null ? "undefined" : (v.passes ? "pass" : "fail");
      var op = m.direction === "lower_is_better" ? "≤" : "≥";
      return "<tr class=\"" + cls + "\" data-metric=\"" + esc(m.metric) + "\"><th scope=\"row\">" + esc(label(m.metric)) +
        "</th><td class=\"num\">" + fmt(v.value) + "</td><td>" + op + " " + m.threshold + "</td><td>" + word +
        "</td></tr>";
    }).join("");
  }

  function accuracyText(st) {
    var change = st.accuracy_change === null ? "–" : (st.accuracy_change >= 0 ? "+" : MINUS) +
      Math.abs(st.accuracy_change).toFixed(4);
    return "Overall accuracy over the groups shown: <b>" + fmt(st.accuracy) + "</b> (at the audited threshold " +
      DATA.start_threshold + ": " + fmt(st.start_accuracy) + "; change " + change + ")";
  }

  function refreshTotals(s, st) {
    document.getElementById("summaries-body").innerHTML = summaryRows(st.summaries);
    document.getElementById("accuracy").innerHTML = accuracyText(st);
    if (s.data.fitted) { drawFrontier(s, st._states); }
  }

  /* ---------- fitted group thresholds and the frontier ---------- */

  // The page's point in the frontier's terms: the constraint's gap over the fitted groups and their accuracy.
  function frontierPoint(s, states) {
    var f = s.data.fitted, correct = 0, total = 0, tpr = [], fpr = [];
    f.groups.forEach(function (name) {
      var st = states[name];
      correct += st.correct;
      total += st.total;
      tpr.push(st.true_positive_rate);
      fpr.push(st.false_positive_rate);
    });
    var gap = summarise("difference", tpr);
    if (f.constraint === "equalized_odds") { gap = Math.max(gap, summarise("difference", fpr)); }
    return {gap: gap, accuracy: fraction(correct, total)};
  }

  function applyFitted(label, k) {
    var s = slicingOf(label), point = s.data.fitted ? s.data.fitted.points[k] : null;
    if (!point) { throw new Error("no fitted point " + k + " in slicing " + JSON.stringify(label)); }
    Object.keys(point.thresholds).forEach(function (name) { s.groups[name].threshold = point.thresholds[name]; });
    s.states = null;
    if (label === current) { show(label); }
  }

  function renderFitted(s) {
    var f = s.data.fitted, section = document.getElementById("fitted");
    section.hidden = !f;
    if (!f) { return; }
    document.getElementById("fitted-note").textContent = "The mitigation's threshold programme (Hardt, Price & " +
      "Srebro) solved on this page's counts for the " + f.groups.length + " judged groups, constraint " +
      label(f.metric) + " (" + f.gap_label + "): each button sets their thresholds to one point of the " +
      "accuracy–fairness frontier (the gap and accuracy it names are the fitted rule's, over these groups). Where " +
      "a group's fitted rule is randomised between two thresholds, the page applies the one used more often (the " +
      "button names those groups), so the page's values can differ a little from the button's.";
    document.getElementById("fitted-buttons").innerHTML = f.points.map(function (p, k) {
      var names = p.randomised.length ? " title=\"randomised in the fitted rule: " + esc(p.randomised.join(", ")) +
        "\"" : "";
      return "<button type=\"button\" data-point=\"" + k + "\"" + names + ">gap " + fmt(p.gap) + ", accuracy " +
        fmt(p.accuracy) + (p.randomised.length ? " *" : "") + "</button>";
    }).join("");
    document.getElementById("fitted-caveat").textContent = "Before using group-specific thresholds: " + f.caveat;
  }

  function drawFrontier(s, states) {
    var f = s.data.fitted, now = frontierPoint(s, states), W = 480, H = 260, L = 52, B = 38, T = 12, R = 28;
    var all = f.points.concat([f.current]).concat(now.gap === null || now.accuracy === null ? [] : [now]);
    var gx = all.map(function (p) { return p.gap; }), ay = all.map(function (p) { return p.accuracy; });
    var x0 = 0, x1 = Math.max.apply(null, gx) * 1.08 || 1;
    var y0 = Math.min.apply(null, ay), y1 = Math.max.apply(null, ay), pad = (y1 - y0) * 0.1 || 0.01;
    y0 -= pad; y1 += pad;
    function x(v) { return L + (W - L - R) * (v - x0) / (x1 - x0); }
    function y(v) { return T + (H - T - B) * (1 - (v - y0) / (y1 - y0)); }
    var line = f.points.map(function (p, k) { return (k ? "L" : "M") + x(p.gap).toFixed(1) + "," + y(p.accuracy).toFixed(1); });
    var out = ["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + W + "\" height=\"" + H + "\" role=\"img\" " +
      "aria-label=\"accuracy-fairness frontier\"><rect x=\"" + L + "\" y=\"" + T + "\" width=\"" + (W - L - R) +
      "\" height=\"" + (H - T - B) + "\" fill=\"#fafafa\" stroke=\"#ccc\"/>"];
    [0, 0.5, 1].forEach(function (q) {
      var gv = x0 + (x1 - x0) * q, av = y0 + (y1 - y0) * q;
      out.push("<text x=\"" + x(gv) + "\" y=\"" + (H - B + 14) + "\" text-anchor=\"middle\">" + fmt(gv) + "</text>");
      out.push("<text x=\"" + (L - 5) + "\" y=\"" + (y(av) + 4) + "\" text-anchor=\"end\">" + fmt(av) + "</text>");
    });
    out.push("<text x=\"" + ((L + W - R) / 2) + "\" y=\"" + (H - 6) + "\" text-anchor=\"middle\">" + esc(f.gap_label) +
      " (" + esc(label(f.metric)) + ") →</text>");
    out.push("<path d=\"" + line.join(" ") + "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>");
    f.points.forEach(function (p, k) {
      out.push("<circle class=\"fitted-point\" cx=\"" + x(p.gap) + "\" cy=\"" + y(p.accuracy) + "\" r=\"3.5\" " +
        "fill=\"#1f77b4\"><title>fitted point " + (k + 1) + "</title></circle>");
    });
    out.push("<rect x=\"" + (x(f.current.gap) - 4) + "\" y=\"" + (y(f.current.accuracy) - 4) + "\" width=\"8\" " +
      "height=\"8\" fill=\"#777\"><title>the audited threshold</title></rect>");
    if (now.gap !== null && now.accuracy !== null) {
      out.push("<circle id=\"frontier-now\" cx=\"" + x(now.gap) + "\" cy=\"" + y(now.accuracy) + "\" r=\"5\" " +
        "fill=\"none\" stroke=\"#c62828\" stroke-width=\"2.5\"><title>the page's thresholds</title></circle>");
    }
    out.push("</svg><p class=\"note\">Accuracy (up) against the gap (right) over the fitted groups: blue, the " +
      "frontier's fitted points; grey square, the audited threshold; red ring, the thresholds on the page now (gap " +
      fmt(now.gap) + ", accuracy " + fmt(now.accuracy) + ").</p>");
    document.getElementById("frontier").innerHTML = out.join("");
  }

  function pageRange(s) {
    var first = s.page * PAGE;
    return [first, Math.min(s.order.length, first + PAGE)];
  }

  function show(label) {
    var s = slicingOf(label);
    current = label;
    var st = currentState(label);
    var range = pageRange(s), rows = [];
    for (var i = range[0]; i < range[1]; i++) { rows.push(groupRow(s, s.order[i], i, st._states[s.order[i]])); }
    document.getElementById("groups-body").innerHTML = rows.join("");
    document.getElementById("pager").hidden = s.order.length <= PAGE;
    document.getElementById("page-text").textContent = "groups " + (range[0] + 1) + "–" + range[1] + " of " +
      s.order.length;
    document.getElementById("resolution").textContent = "Score resolution: " + s.data.resolution + ".";
    renderFitted(s);
    refreshTotals(s, st);
    var fi = document.getElementById("fi");
    if (fi.open) { renderFI(); }
  }

  function updateRow(s, index) {
    var name = s.order[index];
    var states = keptStates(s);
    states[name] = groupState(s, s.groups[name], s.groups[name].threshold);
    var st = currentState(current);
    var row = document.querySelector("#groups-body tr[data-index=\"" + index + "\"]");
    if (!row) { refreshTotals(s, st); return; }  // the group is on another page of the table
    var g = st._states[name];
    row.querySelector(".slider").value = String(g.threshold);
    row.querySelector(".thr").value = String(g.threshold);
    var cells = row.querySelectorAll("td[data-rate]");
    for (var k = 0; k < cells.length; k++) {
      var r = cells[k].getAttribute("data-rate");
      cells[k].innerHTML = fmt(g[r]) + "<br><small>" + fmtInterval(g.intervals[r]) + "</small>";
    }
    refreshTotals(s, st);
  }

  function renderFI() {
    var s = slicingOf(current);
    var metric = document.getElementById("fi-metric").value;
    var ts = DATA.fi_thresholds;
    var states = ts.map(function (t) { return stateWith(s, function () { return t; }); });
    var head = "<tr><th>group</th>" + ts.map(function (t) { return "<th class=\"num\">" + t + "</th>"; }).join("") +
      "</tr>";
    var range = pageRange(s);
    var body = s.order.slice(range[0], range[1]).map(function (name) {
      return "<tr><th scope=\"row\">" + esc(name) + "</th>" + states.map(function (st) {
        return "<td class=\"num\">" + fmt(st.groups[name][metric]) + "</td>";
      }).join("") + "</tr>";
    });
    var sums = DATA.summaries.map(function (m) {
      return "<tr class=\"summary\"><th scope=\"row\">" + esc(label(m.metric)) + "</th>" + states.map(function (st) {
        var v = st.summaries[m.metric];
        var cls = v.passes === null ? "" : (v.passes ? "pass" : "fail");
        return "<td class=\"num " + cls + "\">" + fmt(v.value) + "</td>";
      }).join("") + "</tr>";
    });
    var acc = "<tr class=\"summary\"><th scope=\"row\">overall accuracy</th>" + states.map(function (st) {
      return "<td class=\"num\">" + fmt(st.accuracy) + "</td>";
    }).join("") + "</tr>";
    document.getElementById("fi-table").innerHTML = "<thead>" + head + "</thead><tbody>" + body.join("") + sums.join("") +
      acc + "</tbody>";
  }

  function setThreshold(label, group, t) {
    var s = slicingOf(label);
    var g = s.groups[group];
    if (!g) { throw new Error("no group " + JSON.stringify(group) + " in slicing " + JSON.stringify(label)); }
    g.threshold = checkedThreshold(t);
    var states = keptStates(s);
    states[group] = groupState(s, g, g.threshold);
    if (label === current) { updateRow(s, s.order.indexOf(group)); }
    return publicGroup(states[group]);
  }

  function setAll(label, t) {
    var s = slicingOf(label);
    var value = checkedThreshold(t);
    s.order.forEach(function (name) { s.groups[name].threshold = value; });
    s.states = null;
    if (label === current) { show(label); }
  }

  function publicState(label) {
    var st = currentState(label);
    delete st._states;
    return st;
  }

  function at(label, t) {
    var value = checkedThreshold(t);
    var st = stateWith(slicingOf(label), function () { return value; });
    delete st._states;
    return st;
  }

  function wire() {
    var picker = document.getElementById("slicing");
    picker.innerHTML = LABELS.map(function (l) { return "<option>" + esc(l) + "</option>"; }).join("");
    picker.addEventListener("change", function () { show(picker.value); });
    var body = document.getElementById("groups-body");
    body.addEventListener("input", function (e) {
      var target = e.target;
      var row = target.closest("tr");
      if (!row || !(target.classList.contains("slider") || target.classList.contains("thr"))) { return; }
      var value = Number(target.value);
      if (target.value === "" || !isFinite(value)) { return; }
      var s = slicingOf(current);
      s.groups[s.order[Number(row.getAttribute("data-index"))]].threshold = value;
      updateRow(s, Number(row.getAttribute("data-index")));
    });
    document.getElementById("apply-all").addEventListener("click", function () {
      var value = Number(document.getElementById("all-threshold").value);
      if (isFinite(value)) { setAll(current, value); }
    });
    document.getElementById("reset").addEventListener("click", function () { setAll(current, DATA.start_threshold); });
    document.getElementById("fi").addEventListener("toggle", function (e) { if (e.target.open) { renderFI(); } });
    document.getElementById("fi-metric").innerHTML = RATES.map(function (r) {
      return "<option value=\"" + r + "\">" + esc(label(r)) + "</option>";
    }).join("");
    document.getElementById("fi-metric").addEventListener("change", renderFI);
    function turn(step) {
      var s = slicingOf(current), last = Math.floor((s.order.length - 1) / PAGE);
      s.page = Math.max(0, Math.min(last, s.page + step));
      show(current);
    }
    document.getElementById("fitted-buttons").addEventListener("click", function (e) {
      var button = e.target.closest("button[data-point]");
      if (button) { applyFitted(current, Number(button.getAttribute("data-point"))); }
    });
    document.getElementById("previous").addEventListener("click", function () { turn(-1); });
    document.getElementById("next").addEventListener("click", function () { turn(1); });
    if (LABELS.length) { show(LABELS[0]); }
  }

  window.fairgateExplorer = {
    slicings: function () { return LABELS.slice(); },
    groups: function (label) { return slicingOf(label).order.slice(); },
    setThreshold: setThreshold,
    setAll: setAll,
    state: publicState,
    at: at,
    fitted: function (label) { return slicingOf(label).data.fitted || null; },
    applyFitted: applyFitted,
    frontierPoint: function (label) { return frontierPoint(slicingOf(label), keptStates(slicingOf(label))); },
    show: show,
    short: SHORT
  };
  wire();
}());
