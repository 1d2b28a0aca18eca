// The frame every pipebench HTML page shares (bench/render/html_page.hpp).
#include "bench/render/html_page.hpp"

#include <cstdio>

#include "analysis/text.hpp"

#include "bench/render/plot.hpp"
#include "bench/version.hpp"

namespace pipebench::bench::html_page {

namespace {

// The page's style: readable at 1280 px, plots two to a row, tables compact and scrollable.
constexpr const char* kStyle = R"(
body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0}
th,td{padding:3px 7px;border-bottom:1px solid #e6e6e6;text-align:right;white-space:nowrap}
th{background:#f4f5f7;position:sticky;top:0}
td.t,th.t{text-align:left}td.wrap{white-space:normal;text-align:left;max-width:900px;word-break:break-all}
table.sortable th{cursor:pointer}
.flag{color:#b00020;font-weight:bold}.ok{color:#1b7f3b}.muted{color:#777}
.grid{display:flex;flex-wrap:wrap;gap:16px}
.grid svg,.wide svg{max-width:100%;height:auto;border:1px solid #eee}
.wide{overflow-x:auto}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
p.note{font-size:13px;color:#444;max-width:1100px}
)";

// Sorting: a click on a header sorts by that column (numbers as numbers, '-' last), a second click
// reverses. The page reads the same without it.
constexpr const char* kScript = R"(
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows),dir=th.dataset.dir==='1'?-1:1;
      th.dataset.dir=dir===1?'1':'-1';
      rows.sort(function(a,b){
        var x=a.cells[i].textContent.trim(),y=b.cells[i].textContent.trim();
        var nx=parseFloat(x),ny=parseFloat(y);
        if(!isNaN(nx)&&!isNaN(ny))return dir*(nx-ny);
        if(isNaN(nx)!==isNaN(ny))return isNaN(nx)?1:-1;
        return dir*x.localeCompare(y);
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
)";

}  // namespace

void page_begin(std::ostream& o, const std::string& title) {
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<meta name=\"generator\" content=\"pipebench " << xml_escape(version()) << "\">\n<title>" << xml_escape(title)
    << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>" << xml_escape(title) << "</h1>\n";
}

void page_end(std::ostream& o) {
  o << "<p class=\"note muted\">Written by pipebench " << xml_escape(version()) << " (commit " << xml_escape(commit())
    << "). Self-contained: no network access; the tables sort on a click of their headers.</p>\n<script>"
    << kScript << "</script>\n</body>\n</html>\n";
}

std::string swatch(const std::string& schedule) {
  return "<span class=\"swatch\" style=\"background:" + schedule_colour(schedule) + "\"></span>";
}

std::string run_label(int id, const RunResult& r) {
  return "run " + std::to_string(id) + " " + config_label(r);
}

}  // namespace pipebench::bench::html_page
