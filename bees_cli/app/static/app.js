// Say so when the app stops answering: without this, a live part that cannot reach
// `bees app` freezes quietly and the page looks current (issue 17: a person must not act on
// an old page without knowing it).
(function () {
  function offline(shown) {
    var note = document.getElementById("offline");
    if (note) { note.hidden = !shown; }
  }
  document.addEventListener("htmx:sendError", function () { offline(true); });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail && event.detail.successful) { offline(false); }
  });
})();
