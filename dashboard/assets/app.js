// tine dashboard: keeps the page's live sections fresh from the server's
// event stream. Sections marked data-live are re-fetched and swapped in.
(function () {
  "use strict";
  var body = document.body;
  if (!body || !body.dataset.live) {
    return;
  }
  var timer = null;
  var busy = false;

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live]").forEach(function (el) {
      if (!el.id) {
        return;
      }
      var fresh = doc.getElementById(el.id);
      if (fresh && fresh.innerHTML !== el.innerHTML) {
        el.replaceWith(document.importNode(fresh, true));
      }
    });
    var after = doc.body && doc.body.dataset.after;
    if (after) {
      body.dataset.after = after;
    }
  }

  function refresh() {
    timer = null;
    if (busy) {
      schedule();
      return;
    }
    busy = true;
    fetch(location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html) { swap(html); } })
      .catch(function () {})
      .then(function () { busy = false; });
  }

  function schedule() {
    if (!timer) {
      timer = setTimeout(refresh, 300);
    }
  }

  var dot = document.getElementById("live-dot");
  var es = new EventSource("/ui/events/stream?after=" + encodeURIComponent(body.dataset.after || "0"));
  es.addEventListener("open", function () { if (dot) { dot.classList.add("on"); } });
  es.addEventListener("error", function () { if (dot) { dot.classList.remove("on"); } });
  es.addEventListener("tine", schedule);

  if (body.dataset.page === "run") {
    setInterval(schedule, 3000); // logs grow without events
  }
})();
