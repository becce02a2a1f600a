// Live updates of the dashboard's pages: the server sends a "change" event on the page's event
// stream (server-sent events) when objects it shows changed; the page then fetches itself again
// and replaces its live region (<main id="live">), keeping the scroll position and the focus of
// a control outside it. Without this script the pages are complete; they are only not live.
(function () {
  "use strict";
  var url = document.body.getAttribute("data-events");
  var status = document.getElementById("live-status");
  var main = document.getElementById("live");
  function say(text) { if (status) { status.textContent = text; } }

  // "/" focuses the search field, as on many sites; Escape leaves it.
  document.addEventListener("keydown", function (e) {
    var search = document.querySelector("[data-search]");
    if (e.key === "/" && search && document.activeElement !== search && !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName)) {
      e.preventDefault();
      search.focus();
    } else if (e.key === "Escape" && document.activeElement === search) {
      search.blur();
    }
  });

  if (!url || !window.EventSource || !main) { return; }
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    // Do not replace the region while the user types in or uses a control inside it.
    var active = document.activeElement;
    if (active && main.contains(active) && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(active.tagName)) {
      say("Live: changes waiting (leave the form to see them)");
      again = true;
      active.addEventListener("blur", function () { if (again) { again = false; refresh(); } }, { once: true });
      return;
    }
    busy = true;
    fetch(window.location.href, { headers: { "X-Dashboard-Live": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.text();
      })
      .then(function (html) {
        var open = Array.prototype.map.call(main.querySelectorAll("details[id], details"), function (d) { return d.open; });
        main.innerHTML = html;
        Array.prototype.forEach.call(main.querySelectorAll("details"), function (d, i) { if (i < open.length) { d.open = open[i]; } });
        main.setAttribute("data-refreshed", String(Date.now()));
        say("Live: updated " + new Date().toLocaleTimeString());
      })
      .catch(function (err) { say("Live: refresh failed (" + err.message + "); retrying on the next change"); })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  var es = new EventSource(url);
  es.addEventListener("open", function () { say("Live: connected"); });
  es.addEventListener("change", refresh);
  es.addEventListener("error", function () { say("Live: disconnected, reconnecting…"); });
})();
