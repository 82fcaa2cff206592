// crbc report: the file's only script. No request, no eval, no external code.
// Each backups section holds its sweep as JSON (values of V^(K) per anchor, rounded, and a
// 101-colour V palette computed in Python); the slider recolours the graph's anchors.
(function () {
  "use strict";
  function readJson(el) {
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }
  function colour(palette, v) {
    if (v === null || !isFinite(v)) return "#d5d8dc";
    var i = Math.round(Math.max(0, Math.min(1, v)) * (palette.length - 1));
    return palette[i];
  }
  function setup(section) {
    var data = readJson(section.querySelector("script.crbc-sweep-data"));
    var slider = section.querySelector("input.crbc-k");
    var out = section.querySelector(".crbc-k-out");
    var note = section.querySelector(".crbc-k-note");
    var nodes = section.querySelectorAll("svg.crbc-graph g[data-pick]");
    if (!data || !slider || !nodes.length) return;
    var titles = [];
    nodes.forEach(function (g) {
      var t = g.querySelector("title");
      titles.push(t ? t.textContent.split("\n").slice(1).join("\n") : "");
    });
    function draw(k) {
      var v = data.values[k];
      nodes.forEach(function (g, s) {
        var c = g.querySelector("circle");
        if (c) c.setAttribute("fill", colour(data.palette, v[s]));
        var t = g.querySelector("title");
        if (t) t.textContent = data.labels[s] + "  V^(" + k + ") = " +
          (v[s] === null ? "n/a" : v[s].toFixed(3)) + ", visits " + data.visits[s] + "\n" + titles[s];
      });
      out.textContent = "K = " + k + (k === data.values.length - 1 ? data.last_note : "");
      if (note) note.textContent = data.notes[k];
    }
    slider.addEventListener("input", function () { draw(parseInt(slider.value, 10)); });
    draw(parseInt(slider.value, 10));
    section.classList.add("crbc-live");
  }
  document.querySelectorAll("section.crbc-backups").forEach(setup);
  document.documentElement.setAttribute("data-crbc-ready", "1");
})();
