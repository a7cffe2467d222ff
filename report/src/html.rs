//! The self-contained page: inline CSS and SVG, no script, and a Content-Security-Policy that forbids the
//! browser to fetch anything, so the report reads the same offline or as a mail attachment.

use crate::Section;
use crate::figure::escape;

const CSS: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}\
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}\
.note{color:#7a4b00;background:#fff7e6;padding:.4em .6em}\
code{background:#f3f3f3;padding:0 .2em}ul.toc{columns:2}\
table.fields{border-collapse:collapse;font-size:.9em;margin:1em 0}table.fields td,table.fields th{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}\
table.fields caption{text-align:left;font-weight:bold;padding:.3em 0}";

pub(crate) fn page(sections: &[Section]) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str(&format!("<title>gpumodel report</title>\n<style>{CSS}</style>\n</head>\n<body>\n"));
    h.push_str("<h1>gpumodel report</h1>\n");
    let n: usize = sections.iter().map(|s| s.figures.len()).sum();
    h.push_str(&format!(
        "<p>{n} figures from {} result file(s), drawn by <code>gpumodel report</code> {}.</p>\n<ul class=\"toc\">\n",
        sections.len(),
        env!("CARGO_PKG_VERSION")
    ));
    for (i, s) in sections.iter().enumerate() {
        for f in &s.figures {
            h.push_str(&format!("<li><a href=\"#s{i}-{}\">{}</a></li>\n", escape(&f.id), escape(&f.title)));
        }
    }
    h.push_str("</ul>\n");
    for (i, s) in sections.iter().enumerate() {
        h.push_str(&format!(
            "<section class=\"result\" data-command=\"{}\">\n<h2><code>{}</code> — {}</h2>\n<p>{}</p>\n",
            s.command.name(),
            escape(&s.source),
            s.command.name(),
            escape(&s.subtitle)
        ));
        for note in &s.notes {
            h.push_str(&format!("<p class=\"note\">Not drawn: {}.</p>\n", escape(&note.text)));
        }
        for t in &s.tables {
            h.push_str(&format!("<table class=\"fields\">\n<caption>{}</caption>\n<tr>", escape(&t.title)));
            for c in &t.header {
                h.push_str(&format!("<th>{}</th>", escape(c)));
            }
            h.push_str("</tr>\n");
            for r in &t.rows {
                h.push_str("<tr>");
                for c in r {
                    h.push_str(&format!("<td>{}</td>", escape(c)));
                }
                h.push_str("</tr>\n");
            }
            h.push_str("</table>\n");
            if t.more_rows > 0 {
                h.push_str(&format!(
                    "<p class=\"note\">{} more rows of {} not shown.</p>\n",
                    t.more_rows,
                    escape(&t.title)
                ));
            }
        }
        for f in &s.figures {
            let uid = format!("s{i}-{}", f.id);
            let svg =
                f.svg.replacen(&format!("id=\"{}\"", escape(&f.id)), &format!("id=\"{}\"", escape(&uid)), 1);
            // The SVG draws the title and the caption; the page names the figure without repeating them.
            h.push_str(&format!(
                "<figure data-marks=\"{}\" aria-label=\"{}\">\n{svg}</figure>\n",
                f.marks,
                escape(&f.title)
            ));
        }
        h.push_str("</section>\n");
    }
    h.push_str("</body>\n</html>\n");
    h
}
