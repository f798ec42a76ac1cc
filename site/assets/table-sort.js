// Sort a table.sortable by the clicked header. Cells carry their raw value in
// data-value (empty when missing); missing values always sort last. Rows in
// <tfoot> (the lower-bound row) never move.
(function () {
  "use strict";
  function key(cell, numeric) {
    if (!cell) return null;
    var raw = cell.getAttribute("data-value");
    if (raw === null) raw = cell.textContent.trim();
    if (raw === "") return null;
    if (numeric) {
      var x = parseFloat(raw);
      return isNaN(x) ? null : x;
    }
    return raw.toLowerCase();
  }
  function sortBy(table, th) {
    var headers = Array.prototype.slice.call(th.parentNode.children);
    var index = headers.indexOf(th);
    var numeric = th.getAttribute("data-sort") === "num";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[index], numeric), y = key(b.cells[index], numeric);
      if (x === null && y === null) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      if (x < y) return ascending ? -1 : 1;
      if (x > y) return ascending ? 1 : -1;
      return 0;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var head = table.tHead;
    if (!head) return;
    Array.prototype.forEach.call(head.rows[0].cells, function (th) {
      th.setAttribute("tabindex", "0");
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th); }
      });
    });
  });
})();
