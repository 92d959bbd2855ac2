// The web inbox's live updates: when the daemon says something changed,
// the list is fetched again and put in place, unless the person is
// writing or choosing in it (then once they leave the field). Nothing
// the agents wrote travels in the event stream; the list comes rendered
// and escaped by the server.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!document.getElementById("items") || !window.EventSource) { return; }
  var timer = null, pending = false;
  function busy() {
    var list = document.getElementById("items");
    var a = document.activeElement;
    if (a && list.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName)) { return true; }
    var fields = list.querySelectorAll("input, textarea");
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if (f.type === "radio" || f.type === "checkbox") { if (f.checked !== f.defaultChecked) { return true; } }
      else if (f.type !== "hidden" && f.value !== f.defaultValue) { return true; }
    }
    var open = list.querySelectorAll("details[open]");
    return open.length > 0;
  }
  function refresh() {
    if (busy()) { pending = true; return; }
    fetch("/?part=items", { credentials: "same-origin" }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (html === null) { return; }
      var next = new DOMParser().parseFromString(html, "text/html").getElementById("items");
      var cur = document.getElementById("items");
      if (next && cur && !busy()) { cur.replaceWith(document.importNode(next, true)); }
    }).catch(function () {});
  }
  function soon() { clearTimeout(timer); timer = setTimeout(refresh, 250); }
  var es = new EventSource("/events");
  es.addEventListener("open", function () { if (live) { live.textContent = "live"; } soon(); });
  es.addEventListener("error", function () { if (live) { live.textContent = "reconnecting…"; } });
  es.addEventListener("change", soon);
  document.addEventListener("focusout", function () { if (pending) { pending = false; soon(); } });
  document.addEventListener("toggle", function () { if (pending) { pending = false; soon(); } }, true);
})();
