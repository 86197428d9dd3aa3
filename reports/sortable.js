// Sortable group tables: click a column heading to sort by it (again to reverse). Inline, no library, so the
// report works offline. Numbers sort as numbers ("1,234", "0.25"); suppressed and undefined cells sort last.
(function () {
  function key(cell) {
    var text = (cell.getAttribute("data-sort") || cell.textContent).trim();
    var number = parseFloat(text.replace(/,/g, ""));
    return isNaN(number) || /^</.test(text) ? null : number;
  }
  function sortBy(table, column, descending) {
    var body = table.tBodies[0];
    var rows = [];
    for (var b = 0; b < table.tBodies.length; b++) {
      rows = rows.concat(Array.prototype.slice.call(table.tBodies[b].rows));
    }
    rows.sort(function (a, b) {
      var x = key(a.cells[column]), y = key(b.cells[column]);
      if (x === null || y === null) {
        if (x === null && y === null) { return a.cells[column].textContent.localeCompare(b.cells[column].textContent); }
        return x === null ? 1 : -1;
      }
      return descending ? y - x : x - y;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (head, column) {
      head.setAttribute("role", "button");
      head.setAttribute("tabindex", "0");
      head.title = "Sort by this column";
      var descending = false;
      function go() {
        sortBy(table, column, descending);
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        head.setAttribute("aria-sort", descending ? "descending" : "ascending");
        descending = !descending;
      }
      head.addEventListener("click", go);
      head.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
    });
  });
})();
