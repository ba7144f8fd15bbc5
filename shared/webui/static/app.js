// Liveness for Stepline's pages; everything works without it.
"use strict";
(function () {
  // Runs list: refresh the rows every few seconds.
  var runs = document.getElementById("runs");
  if (runs && runs.dataset.poll) {
    var body = runs.querySelector("tbody");
    setInterval(function () {
      if (document.hidden) return;
      fetch(runs.dataset.poll, { credentials: "same-origin" }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) { if (html !== null) body.innerHTML = html; }).catch(function () {});
    }, 3000);
  }
  // A run's page: follow the run through server-sent events, keeping the
  // step panels the reader opened open.
  var live = document.getElementById("live");
  if (live && live.dataset.sse && window.EventSource) {
    var es = new EventSource(live.dataset.sse);
    es.addEventListener("update", function (e) {
      var open = {};
      live.querySelectorAll("details[open]").forEach(function (d) { open[d.id] = true; });
      live.innerHTML = e.data;
      live.querySelectorAll("details").forEach(function (d) { if (open[d.id]) d.open = true; });
    });
    es.addEventListener("end", function (e) {
      es.close();
      live.dataset.ended = e.data;
    });
  }
})();
