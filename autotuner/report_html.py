"""index.html: one self-contained page (inline CSS, SVG and a few lines of JS;
nothing fetched) with the Pareto plot, the speedup table, the front
configurations and their transformed IR.

Every user-controlled string (program, metric, knob names and values, IR,
notes) goes through `esc`; the tooltip data is JSON in a data block with
`<`, `>`, `&`, U+2028/9 escaped, and the script writes it with textContent
only. A Content-Security-Policy allows our one script (by hash) and nothing
else, so even a missed escape could not run injected script."""

from __future__ import annotations

import base64
import hashlib
import json

from autotuner.report_plot import figure
from autotuner.report_progress import hypervolume_html
from autotuner.report_summary import (
    LEVELS,
    MODES,
    QOS_LOSS_DEFINITION,
    ablation_sections,
    dominated_warning,
    failure_lines,
    finite,
    fmt_gap,
    fmt_knobs,
    fmt_loss,
    fmt_seconds,
    fmt_speedup,
    importance_sections,
    speedup_cells,
)
from autotuner.report_svg import esc, legend, panel

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1d1d1f;
 margin:0 auto;max-width:1180px;padding:18px 22px 60px}
h1{font-size:1.45em;margin:.2em 0 .3em} h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.9em}
.meta{display:flex;flex-wrap:wrap;gap:4px 26px;margin:0;padding:0;list-style:none;color:#333}
.meta b{font-weight:600} .def{color:#555;font-size:.92em;max-width:70em}
.plots{display:flex;flex-wrap:wrap;gap:12px} .plots svg.plot{flex:1 1 480px;max-width:580px;height:auto}
svg.progress{width:100%;max-width:340px;height:auto}
svg text{font-family:inherit} .title{font-size:14px;font-weight:600;fill:#222}
.tick{font-size:11px;fill:#555} .label{font-size:12.5px;fill:#333} .note{font-size:11px;fill:#666}
.area{fill:#fff;stroke:#bbb} .grid{stroke:#eee} .exact{stroke:#777;stroke-dasharray:2 3}
.budget{stroke:#c62828;stroke-width:1.6;stroke-dasharray:6 4} .budget-label{fill:#c62828}
.step{fill:none;stroke-width:1.4;opacity:.55}
.pt{cursor:pointer} .front{stroke:#fff;stroke-width:1.2} .trial{fill:#fff;stroke-width:1.4}
.dom{opacity:.75} .pt.hl,.pt:focus{stroke:#000;stroke-width:2.4;outline:none}
.legend{display:flex;flex-wrap:wrap;gap:2px 18px;list-style:none;padding:0;margin:.3em 0;font-size:.9em;color:#333}
.legend li{display:flex;align-items:center;gap:5px} .sw{width:20px;height:14px}
table{border-collapse:collapse;margin:.4em 0;font-size:.93em} th,td{padding:4px 10px;border-bottom:1px solid #e3e3e3;
 text-align:right;vertical-align:top} th{background:#f5f5f7;font-weight:600} td.l,th.l{text-align:left}
tr.hl td{background:#fff6d6} .over{color:#c62828} .knobs{margin:0;padding:0;list-style:none}
.warn{border:2px solid #c62828;background:#fdecea;padding:8px 12px;border-radius:6px;max-width:70em}
details{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:4px 10px} summary{cursor:pointer}
details pre{max-height:30em;overflow:auto;background:#f8f8fa;padding:8px;margin:6px 0}
#tip{position:fixed;z-index:9;max-width:440px;background:#1f2329;color:#f4f4f4;padding:7px 10px;border-radius:6px;
 font-size:12.5px;line-height:1.4;pointer-events:none;box-shadow:0 3px 12px rgba(0,0,0,.25);white-space:pre-wrap;
 overflow-wrap:anywhere}
[hidden]{display:none!important}
.views button{font:inherit;font-size:.88em;padding:3px 10px;margin:0 6px 6px 0;border:1px solid #bbb;border-radius:5px;
 background:#fff;cursor:pointer} .views button[aria-pressed=true]{background:#1f6fb4;border-color:#1f6fb4;color:#fff}
#tip strong{display:block;margin-bottom:2px;color:#fff}
"""

# Tooltips and highlighting. Text from the data block is set with textContent only.
JS = """(function(){
var data=JSON.parse(document.getElementById('marks').textContent);
var tip=document.getElementById('tip');
function mark(f,on){if(f===null)return;
 document.querySelectorAll('[data-f="'+f+'"],#row-'+f).forEach(function(e){e.classList.toggle('hl',on);});}
function show(el,x,y){var d=data[+el.getAttribute('data-p')];tip.textContent='';
 var h=document.createElement('strong');h.textContent=d.t;tip.appendChild(h);
 d.l.forEach(function(s){var p=document.createElement('div');p.textContent=s;tip.appendChild(p);});
 tip.hidden=false;var r=tip.getBoundingClientRect();
 var left=Math.max(6,Math.min(x+14,window.innerWidth-r.width-6)),top=y+14;
 if(top+r.height>window.innerHeight-6)top=Math.max(6,y-r.height-14);
 tip.style.left=left+'px';tip.style.top=top+'px';mark(d.f,true);}
function hide(el){tip.hidden=true;mark(data[+el.getAttribute('data-p')].f,false);}
document.querySelectorAll('[data-p]').forEach(function(el){
 el.addEventListener('mouseenter',function(e){show(el,e.clientX,e.clientY);});
 el.addEventListener('mouseleave',function(){hide(el);});
 el.addEventListener('focus',function(){var r=el.getBoundingClientRect();show(el,r.right,r.bottom);});
 el.addEventListener('blur',function(){hide(el);});
 el.addEventListener('click',function(){var f=data[+el.getAttribute('data-p')].f;if(f===null)return;
  var d=document.getElementById('ir-'+f);if(d){d.open=true;d.scrollIntoView({block:'start'});}});
});
document.querySelectorAll('[data-view]').forEach(function(b){b.addEventListener('click',function(){
 document.querySelectorAll('[data-view]').forEach(function(o){var on=o===b;o.setAttribute('aria-pressed',on);
  document.getElementById('view-'+o.getAttribute('data-view')).hidden=!on;});});});
})();"""


def script_json(obj) -> str:
    """JSON safe inside a <script> element: no `</script>`, no HTML parsing surprises."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for ch, rep in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(ch, rep)
    return s


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"


def _meta(result) -> str:
    items = [("QoS metric", esc(result.qos_metric)), ("QoS-loss budget", fmt_loss(result.budget)),
             ("trials", f"{esc(result.trials)} ({esc(result.failed_trials)} failed"
                        + (f", {esc(result.pruned_trials)} stopped early"
                           if getattr(result, "pruned_trials", 0) else "")
                        + ")"),
             ("tuning wall time", fmt_seconds(result.tuning_seconds))]
    n_tune, n_eval = getattr(result, "n_tune", None), getattr(result, "n_eval", None)
    if n_tune is not None:
        items.append(("inputs", f"{esc(n_tune)} tuning / {esc(n_eval if n_eval is not None else '-')} evaluation"))
    for key, label in (("exact_seconds_tune", "exact run (tuning inputs)"),
                       ("exact_seconds_eval", "exact run (evaluation inputs)")):
        if finite(getattr(result, key, None)):
            items.append((label, fmt_seconds(getattr(result, key))))
    for key in ("sampler", "seed"):
        if getattr(result, key, None) is not None:
            items.append((key, esc(getattr(result, key))))
    if getattr(result, "timing", None):
        items.append(("timing (tuning and held-out)", esc(result.timing)))
    return '<ul class="meta">' + "".join(f"<li><b>{k}:</b> {v}</li>" for k, v in items) + "</ul>"


def _speedup_table(result) -> str:
    table = speedup_cells(result.front)
    head = "".join(f"<th>&le; {round(lv * 100)} %</th>" for lv in LEVELS)
    rows = []
    for m in MODES:
        for s, label in (("tune", "tuning"), ("eval", "evaluation")):
            cells = "".join(f"<td>{esc(x)}</td>" for x in table[m][s])
            rows.append(f'<tr><td class="l">{m}</td><td class="l">{label}</td>{cells}</tr>')
    return (f'<table><thead><tr><th class="l">mode</th><th class="l">inputs</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
            "<p class=\"def\">Best speedup over the exact program among the front configurations whose QoS loss "
            "(on those inputs) is within the level; - where none is.</p>")


def _knob_list(knobs) -> str:
    kv = fmt_knobs(knobs)
    if not kv:
        return "<i>all knobs as annotated</i>"
    return '<ul class="knobs">' + "".join(f"<li><code>{esc(k)} = {esc(v)}</code></li>" for k, v in kv) + "</ul>"


def _front_table(result) -> str:
    money = any(finite(getattr(p, "money_tune", None)) for p in result.front)
    head = ["#", "mode", "QoS loss (tuning)", "speedup (tuning)", "QoS loss (evaluation)", "speedup (evaluation)",
            "evaluation vs tuning speedup", "time (tuning)", "time (evaluation)"]
    head += (["cost (tuning)", "cost (evaluation)"] if money else []) + ["knobs"]
    ths = "".join(f'<th{" class=l" if h in ("mode", "knobs") else ""}>{h}</th>' for h in head)
    rows = []
    for i, p in enumerate(result.front):
        over = finite(p.qos_loss_eval) and finite(result.budget) and p.qos_loss_eval > result.budget
        eval_loss = ('<td class="over" title="over the budget on the evaluation inputs">'
                     f'{fmt_loss(p.qos_loss_eval, p.qos_loss_eval_ci)}</td>'
                     if over else f"<td>{fmt_loss(p.qos_loss_eval, p.qos_loss_eval_ci)}</td>")
        cells = [f'<td><a href="#ir-{i}">{i + 1}</a></td>', f'<td class="l">{esc(p.mode)}</td>',
                 f"<td>{fmt_loss(p.qos_loss_tune)}</td>", f"<td>{_x(p.speedup_tune, p.speedup_tune_ci)}</td>",
                 eval_loss, f"<td>{_x(p.speedup_eval, p.speedup_eval_ci)}</td>", f"<td>{fmt_gap(p)}</td>",
                 f"<td>{fmt_seconds(p.seconds_tune)}</td>",
                 f"<td>{fmt_seconds(p.seconds_eval)}</td>"]
        if money:
            cells += [f"<td>{_money(p.money_tune)}</td>", f"<td>{_money(p.money_eval)}</td>"]
        cells.append(f'<td class="l">{_knob_list(p.knobs)}</td>')
        rows.append(f'<tr id="row-{i}">{"".join(cells)}</tr>')
    if not rows:
        return "<p>The front is empty: no configuration was measured within the budget.</p>"
    return (f"<table><thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            '<p class="def">Speedups with their 95 % interval in brackets (paired timing), held-out QoS losses '
            'with theirs (bootstrap over the held-out inputs); times are one pass over the inputs of that '
            'split.</p>')


def _x(v, ci=None) -> str:
    return esc(fmt_speedup(v, ci)) if finite(v) else "-"


def _sections(result) -> str:
    """Which knobs matter (importances, ablations): the tables summary.md has too."""
    out = []
    for sec in importance_sections(result) + ablation_sections(result):
        ths = "".join(f'<th{" class=l" if i < 2 else ""}>{esc(h)}</th>' for i, h in enumerate(sec.head))
        rows = "".join("<tr>" + "".join(f'<td{" class=l" if i < 2 else ""}>{esc(c)}</td>' for i, c in enumerate(r))
                       + "</tr>" for r in sec.rows)
        out.append(f"<h{sec.level + 1}>{esc(sec.title)}</h{sec.level + 1}><p class=\"def\">{esc(sec.intro)}</p>"
                   f"<table><thead><tr>{ths}</tr></thead><tbody>{rows}</tbody></table>")
    return "\n".join(out)


def _money(v) -> str:
    return f"{v:.4g}" if finite(v) else "-"


def _ir_sections(result) -> str:
    out = []
    for i, p in enumerate(result.front):
        head = (f"#{i + 1} {esc(p.mode)}: QoS loss {fmt_loss(p.qos_loss_tune)} / {fmt_loss(p.qos_loss_eval)}, "
                f"speedup {_x(p.speedup_tune)} / {_x(p.speedup_eval)} (tuning / evaluation)")
        body = (f"<pre><code>{esc(p.ir)}</code></pre>" if p.ir
                else "<p>No IR recorded for this configuration (the program has no MLIR form).</p>")
        out.append(f'<details id="ir-{i}"><summary>{head}</summary>{_knob_list(p.knobs)}{body}</details>')
    return "\n".join(out) or "<p>No front configurations.</p>"


def render_html(result) -> str:
    """The whole page for a TuningResult whose front is already in display order."""
    tune, ev, ax, zoom = figure(result)
    data = [{"t": m.title, "l": m.lines, "f": m.front} for m in tune + ev]
    n_trials = sum(1 for m in tune if m.front is None)
    modes = [m for m in MODES if any(p.mode == m for p in result.front)]
    other = [m for m in MODES if any(t.front is None and not t.dominated and t.mode == m for t in tune)]

    def plots(axes, view: str, hidden: bool) -> str:
        n_off = sum(1 for m in tune + ev if axes.clamp(m)[2])
        off = (f"{n_off} point{'s' if n_off != 1 else ''} outside the plotted range "
               f"{'are' if n_off != 1 else 'is'} drawn on its border (the tooltip has the real figures)."
               if n_off else "")
        return (f'<div id="view-{view}"{" hidden" if hidden else ""}><div class="plots">'
                + panel(f"Tuning inputs: front and {n_trials} other trials", tune, 0, axes, result.budget,
                        "no trial has figures", steps=True)
                + panel("Held-out evaluation inputs: the front re-measured", ev, len(tune), axes, result.budget,
                        "the front was not re-measured on held-out inputs", steps=False)
                + f'</div><p class="def">{off}</p></div>')

    views = plots(ax, "full", False)
    if zoom is not None:
        views = ('<div class="views" role="group" aria-label="QoS-loss range">'
                 '<button type="button" data-view="full" aria-pressed="true">every trial</button>'
                 '<button type="button" data-view="zoom" aria-pressed="false">zoom to the front</button></div>'
                 + views + plots(zoom, "zoom", True))
    notes = getattr(result, "notes", None) or []
    notes_html = ("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>") if notes else ""
    fails = failure_lines(result)
    if fails:
        notes_html = (f"<h2>Failed trials ({esc(len(result.failures))}; not on the front)</h2><ul>"
                      + "".join(f"<li><code>{esc(x)}</code></li>" for x in fails) + "</ul>" + notes_html)
    title = f"Tuning report: {esc(result.program)}"
    warning = dominated_warning(result)
    warning_html = f'<p class="warn" role="alert"><b>Warning:</b> {esc(warning)}</p>\n' if warning else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_csp(JS)}">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{title}</title><link rel="icon" href="data:,">
<style>{CSS}</style></head>
<body>
<h1>Tuning report: <code>{esc(result.program)}</code></h1>
{warning_html}{_meta(result)}
<p class="def">{esc(QOS_LOSS_DEFINITION)}</p>
<h2>Pareto front: speedup vs QoS loss</h2>
{legend(modes, any(m.dominated for m in tune), other)}
<p class="def">Hover or focus a point for its knob settings; click a front point for its transformed IR.</p>
{views}
<h2>Speedup over exact within each QoS-loss level</h2>
{_speedup_table(result)}
<h2>Front configurations</h2>
{_front_table(result)}
{hypervolume_html(result)}
{_sections(result)}
<h2>Transformed IR of each front configuration</h2>
{_ir_sections(result)}
{notes_html}
<div id="tip" role="tooltip" hidden></div>
<script type="application/json" id="marks">{script_json(data)}</script>
<script>{JS}</script>
</body></html>
"""
