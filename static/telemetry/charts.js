/* Ratiba telemetry charts (Chart.js from node_modules, served by staticfiles; no CDN). */
(function () {
  "use strict";
  var C = {accent: "#0f766e", blue: "#2563eb", amber: "#d97706", red: "#dc2626", violet: "#7c3aed",
           grey: "#94a3b8", green: "#16a34a"};
  var palette = [C.accent, C.blue, C.amber, C.violet, C.red, C.green, C.grey, "#0891b2", "#db2777"];
  var drawn = [];

  function base(extra) {
    var options = {
      responsive: true, maintainAspectRatio: false, animation: false,
      interaction: {mode: "index", intersect: false},
      plugins: {legend: {position: "bottom", labels: {boxWidth: 12}}},
      scales: {x: {grid: {display: false}}, y: {beginAtZero: true}}
    };
    return Object.assign(options, extra || {});
  }

  function draw(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas || typeof Chart === "undefined") { return null; }
    var chart = new Chart(canvas, config);
    drawn.push(chart);
    canvas.setAttribute("data-drawn", "1");
    return chart;
  }

  function day(label) { return label.slice(5); }  // MM-DD
  function col(rows, name) { return rows.map(function (r) { return r[name]; }); }

  function dashboard(data) {
    var d = data.daily, labels = d.map(function (r) { return day(r.day); });
    draw("chart-turns", {type: "bar", data: {labels: labels, datasets: [
      {label: "turns", data: col(d, "turns"), backgroundColor: C.accent, order: 2},
      {label: "refusals", data: col(d, "refusals"), backgroundColor: C.red, order: 1}
    ]}, options: base()});
    draw("chart-rates", {type: "line", data: {labels: labels, datasets: [
      {label: "empty %", data: col(d, "empty_rate"), borderColor: C.red, backgroundColor: C.red, spanGaps: true},
      {label: "fallback %", data: col(d, "fallback_rate"), borderColor: C.amber, backgroundColor: C.amber, spanGaps: true},
      {label: "trivial %", data: col(d, "trivial_rate"), borderColor: C.blue, backgroundColor: C.blue, spanGaps: true}
    ]}, options: base()});
    draw("chart-tokens", {type: "line", data: {labels: labels, datasets: [
      {label: "avg retrieved", data: col(d, "avg_retrieved_tokens"), borderColor: C.accent, backgroundColor: C.accent, spanGaps: true},
      {label: "p95 prompt", data: col(d, "p95_prompt_tokens"), borderColor: C.violet, backgroundColor: C.violet, spanGaps: true}
    ]}, options: base()});
    draw("chart-latency", {type: "line", data: {labels: labels, datasets: [
      {label: "embedding ms", data: col(d, "avg_embedding_ms"), borderColor: C.blue, backgroundColor: C.blue, spanGaps: true},
      {label: "retrieval ms", data: col(d, "avg_retrieval_ms"), borderColor: C.amber, backgroundColor: C.amber, spanGaps: true}
    ]}, options: base()});
    draw("chart-cost", {type: "bar", data: {labels: labels, datasets: [
      {label: "USD", data: col(d, "cost_usd"), backgroundColor: C.violet}
    ]}, options: base()});
    var intents = data.intent_mix;
    draw("chart-intents", {type: "doughnut", data: {labels: col(intents, "name"), datasets: [
      {data: col(intents, "count"), backgroundColor: palette}
    ]}, options: {responsive: true, maintainAspectRatio: false, animation: false,
                  plugins: {legend: {position: "right", labels: {boxWidth: 12}}}}});
    var overflow = data.overflow.by_intent;
    if (overflow.length) {
      draw("chart-overflow", {type: "bar", data: {labels: col(overflow, "intent"), datasets: [
        {label: "overflows", data: col(overflow, "overflows"), backgroundColor: C.amber, maxBarThickness: 26}
      ]}, options: base({indexAxis: "y", plugins: {legend: {display: false}}})});
    } else {
      var canvas = document.getElementById("chart-overflow");
      if (canvas) { canvas.style.display = "none"; }
    }
    window.ratibaChartsDrawn = drawn.length;
  }

  function gaps(data) {
    var groups = data.groups;
    if (groups.length) {
      draw("chart-gaps", {type: "bar", data: {labels: col(groups, "label"), datasets: [
        {label: "times asked", data: col(groups, "count"), backgroundColor: C.accent, maxBarThickness: 26}
      ]}, options: base({indexAxis: "y", plugins: {legend: {display: false}},
                         scales: {x: {beginAtZero: true, ticks: {precision: 0}}, y: {grid: {display: false}}}})});
    }
    var languages = data.languages;
    if (languages.length) {
      draw("chart-gap-languages", {type: "doughnut", data: {labels: col(languages, "name"), datasets: [
        {data: col(languages, "count"), backgroundColor: palette}
      ]}, options: {responsive: true, maintainAspectRatio: false, animation: false,
                    plugins: {legend: {position: "bottom", labels: {boxWidth: 12}}}}});
    }
    window.ratibaChartsDrawn = drawn.length;
  }

  window.RatibaCharts = {dashboard: dashboard, gaps: gaps};
})();
