// tine dashboard: keeps the page's live sections fresh from the server's
// event stream. Sections marked data-live are re-fetched and swapped in.
// On a group page the stream also says when the group's fork-run report
// changed; then only the fork-run section is fetched and swapped. Elapsed
// times of running forks tick here between updates.
(function () {
  "use strict";
  var body = document.body;
  if (!body || !body.dataset.live) {
    return;
  }
  var timer = null;
  var busy = false;

  // replace puts fresh in el's place, keeping open the <details> the
  // person opened.
  function replace(el, fresh) {
    var open = {};
    el.querySelectorAll("details[id]").forEach(function (d) { open[d.id] = d.open; });
    var node = document.importNode(fresh, true);
    node.querySelectorAll("details[id]").forEach(function (d) {
      if (d.id in open) { d.open = open[d.id]; }
    });
    el.replaceWith(node);
    stamp(node);
  }

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live]").forEach(function (el) {
      if (!el.id) {
        return;
      }
      var fresh = doc.getElementById(el.id);
      if (fresh && fresh.innerHTML !== el.innerHTML) {
        replace(el, fresh);
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

  // The fork-run section, on a group page: refreshed alone when its report
  // changes, which is cheap (no diffs are computed).
  var fr = document.getElementById("forkrun");
  var group = fr && fr.dataset.group;
  var frBusy = false;
  var frAgain = false;

  function refreshForkRun() {
    if (frBusy) {
      frAgain = true;
      return;
    }
    frBusy = true;
    fetch("/ui/groups/" + encodeURIComponent(group) + "/forkrun", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        var el = document.getElementById("forkrun");
        if (!html || !el) {
          return;
        }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("forkrun");
        if (fresh) {
          replace(el, fresh);
        }
      })
      .catch(function () {})
      .then(function () {
        frBusy = false;
        if (frAgain) {
          frAgain = false;
          refreshForkRun();
        }
      });
  }

  // Elapsed times: the server renders seconds as of the page; running ones
  // advance by the browser's clock from when they arrived.
  function stamp(root) {
    var now = Date.now();
    root.querySelectorAll("[data-ticking]").forEach(function (el) { el.dataset.t0 = now; });
  }

  function seconds(s) {
    var n = Math.max(0, Math.floor(s));
    var pad = function (x) { return (x < 10 ? "0" : "") + x; };
    if (n < 60) { return n + "s"; }
    if (n < 3600) { return Math.floor(n / 60) + "m" + pad(n % 60) + "s"; }
    return Math.floor(n / 3600) + "h" + pad(Math.floor(n % 3600 / 60)) + "m";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-ticking]").forEach(function (el) {
      var base = parseFloat(el.dataset.elapsed) || 0;
      var t0 = parseFloat(el.dataset.t0) || now;
      el.textContent = seconds(base + (now - t0) / 1000);
    });
  }

  stamp(document);
  setInterval(tick, 1000);

  var url = "/ui/events/stream?after=" + encodeURIComponent(body.dataset.after || "0");
  if (group) {
    url += "&group=" + encodeURIComponent(group) + "&report=" + encodeURIComponent(fr.dataset.stamp || "0");
  }
  var dot = document.getElementById("live-dot");
  var es = new EventSource(url);
  es.addEventListener("open", function () { if (dot) { dot.classList.add("on"); } });
  es.addEventListener("error", function () { if (dot) { dot.classList.remove("on"); } });
  es.addEventListener("tine", schedule);
  if (group) {
    es.addEventListener("report", refreshForkRun);
  }

  if (body.dataset.page === "run") {
    setInterval(schedule, 3000); // logs grow without events
  }
})();
