// Live updates: the console tells the page when the open items change
// (a run paused, an item was decided). The page never reloads itself
// under a form being filled: it shows a notice with a link.
"use strict";
(function () {
  if (!window.EventSource) { return; }
  var live = document.getElementById("live");
  if (!live) { return; }
  var source = new EventSource("/events");
  source.addEventListener("inbox", function () { live.hidden = false; });
})();
