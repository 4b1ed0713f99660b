// A click (or Enter) on a sortable table's column heading sorts its rows by
// that column, again the other way; a cell's data-v, when it has one, is
// the number it sorts by. Without this script the tables are plain tables.
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  heads.forEach(function (th, col) {
    th.tabIndex = 0;
    th.title = "sort by " + th.textContent;
    function key(tr) {
      var td = tr.cells[col], v = td ? td.getAttribute("data-v") : null;
      return v !== null && v !== "" && !isNaN(v) ? parseFloat(v) : (td ? td.textContent : "");
    }
    function sort() {
      var up = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y), undefined, {numeric: true});
        return up ? d : -d;
      });
      rows.forEach(function (tr) { body.appendChild(tr); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
    });
  });
});
