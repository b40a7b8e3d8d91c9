"""The console's pages (Jinja2, every value escaped) and its one stylesheet.

Kept in Python rather than as package data: the pages travel with the code, and the Content
Security Policy allows only this server's own stylesheet (no inline style, no script at all).
"""

from __future__ import annotations

from jinja2 import DictLoader, Environment, select_autoescape

CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:0;color:#1a1a1a;background:#fafbfc}
header{background:#1f3a5f;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:center}
header nav{display:flex;gap:20px} header a{color:#fff;text-decoration:none;font-weight:bold} header .who{margin-left:auto;font-size:13px}
header form{display:inline;margin:0} header button{font-size:12px}
.skip{position:absolute;left:-9999px;top:8px;background:#fff;color:#1a1a1a;padding:6px 10px;z-index:10}
.skip:focus{left:8px}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,[tabindex]:focus-visible{outline:3px solid #b35c00;outline-offset:2px}
header a:focus-visible,header button:focus-visible{outline-color:#ffd27a}
main{padding:16px 24px;max-width:1500px} main:focus{outline:none}
a{color:#0b4f9c}
h1{font-size:21px;margin:8px 0} h2{font-size:16px;margin-top:26px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:8px 0;background:#fff}
caption{text-align:left;font-weight:bold;padding:4px 0;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 7px;text-align:left;vertical-align:top} thead th,tbody th[scope=row]{background:#eef2f7}
tbody th[scope=row]{font-weight:normal}
td.num{text-align:right} code{font-family:Menlo,Consolas,monospace;font-size:12px}
.overdue{background:#f4a3a3;color:#1a1a1a;font-weight:bold;padding:1px 6px;border-radius:3px}
.state{padding:1px 6px;border-radius:3px;background:#e4e4e4;color:#1a1a1a}
.diagram{overflow:auto;max-height:900px;border:1px solid #ddd;padding:6px;background:#fff} .diagram svg{max-width:100%;height:auto}
figure{margin:8px 0} figcaption{font-size:13px;margin:4px 0}
.muted{color:#595959;font-size:12px} .error{background:#fde2e2;border:1px solid #c55;padding:8px;margin:8px 0}
.notice{background:#e3f4e3;border:1px solid #6a6;padding:8px;margin:8px 0}
form.attest{margin:4px 0} form.attest textarea{width:26em;height:3em}
.signin{max-width:420px;margin:60px auto;background:#fff;border:1px solid #ccc;padding:20px}
.signin input[type=password]{width:100%;box-sizing:border-box;padding:6px}
.filters{margin:8px 0;display:flex;flex-wrap:wrap;gap:10px;align-items:end} .filters label{display:block;font-size:12px}
.filters .check label{display:inline}
.counts ul{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:6px}
.counts a{display:inline-block;padding:2px 8px;border:1px solid #9aa;border-radius:3px;text-decoration:none;color:#1a1a1a}
.counts a[aria-current]{border:2px solid #1f3a5f;font-weight:bold}
.pager{margin:8px 0;display:flex;gap:14px;align-items:center}
.swatch{display:inline-block;width:13px;height:13px;border:1px solid #595959;vertical-align:middle;margin:0 3px 0 10px}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px;font-size:12px}
"""

BASE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{% block title %}piitracer console{% endblock %}</title>
<link rel="stylesheet" href="/console/static/console.css"></head><body>
<a class="skip" href="#main" id="skip">Skip to the content</a>
<header><nav aria-label="Console"><a href="/console/board">piitracer console</a>
{% if user %}{% if user.can_attest %}<a href="/console/owners/{{ user.name|urlencode }}">my steps</a>{% endif %}
<a href="/console/approvals" id="approvals-link">approvals</a>{% endif %}</nav>
{% if user %}<span class="who">signed in as <strong id="who">{{ user.name }}</strong> ({{ user.role }})
<form method="post" action="/console/sign-out"><input type="hidden" name="csrf" value="{{ csrf }}">
<button type="submit">sign out</button></form></span>{% endif %}</header>
<main id="main" tabindex="-1">{% if error %}<p class="error" id="error" role="alert">{{ error }}</p>{% endif %}
{% if notice %}<p class="notice" id="notice" role="status">{{ notice }}</p>{% endif %}
{% block main %}{% endblock %}</main></body></html>
"""

# The token field is the sign-in's password: autocomplete="current-password" names its purpose (WCAG
# 1.3.5); axe-core, run by the browser tests, fails "off" on a password field as serious, and
# browsers ignore "off" there for their password managers anyway.
SIGN_IN = """{% extends "base.html" %}{% block title %}Sign in: piitracer console{% endblock %}{% block main %}
<div class="signin"><h1>piitracer console</h1>
<p>Erasure requests, their deadlines and evidence. Sign in with the token <code>{{ commands.line('owners_add') or 'piitracer owners add' }}</code>
printed for you.</p>
<form method="post" action="/console/sign-in"><input type="hidden" name="csrf" value="{{ csrf }}">
<label for="token">Token</label><br><input type="password" id="token" name="token" autocomplete="current-password" required>
<p><button type="submit" id="sign-in">Sign in</button></p></form></div>{% endblock %}
"""

PAGER = """{% macro pager(page, pages, link, name, what) %}{% if pages > 1 %}<nav class="pager" aria-label="{{ what }} pages">
{% if page > 1 %}<a href="{{ link(page - 1) }}" rel="prev" id="{{ name }}-prev">previous {{ what }} page</a>{% endif %}
<span id="{{ name }}-position">page {{ page }} of {{ pages }}</span>
{% if page < pages %}<a href="{{ link(page + 1) }}" rel="next" id="{{ name }}-next">next {{ what }} page</a>{% endif %}
</nav>{% endif %}{% endmacro %}
"""

BOARD = """{% extends "base.html" %}{% from "pager.html" import pager %}{% block title %}Requests: piitracer console{% endblock %}{% block main %}
<h1>Erasure requests</h1>
<nav class="counts" aria-label="Requests by state"><ul>
<li><a href="{{ link(state='', page=1) }}"{% if not query.state %} aria-current="true"{% endif %}>every state: {{ counts.values()|sum }}</a></li>
{% for s, n in counts.items() %}<li><a href="{{ link(state=s, page=1) }}" data-state="{{ s }}"{% if s == query.state %} aria-current="true"{% endif %}>{{ request_label(s) }}: {{ n }}</a></li>{% endfor %}
</ul></nav>
<form class="filters" method="get" action="/console/board" role="search" aria-label="Find requests">
<div><label for="q">request id (or its beginning)</label><input type="search" id="q" name="q" value="{{ query.search or '' }}"></div>
<div><label for="state-filter">state</label><select name="state" id="state-filter"><option value="">any</option>
{% for s in states %}<option value="{{ s }}"{% if s == query.state %} selected{% endif %}>{{ request_label(s) }}</option>{% endfor %}</select></div>
<div><label for="owner-filter">owner</label><select name="owner" id="owner-filter"><option value="">any</option>
{% for o in owners %}<option value="{{ o }}"{% if o == query.owner %} selected{% endif %}>{{ o }}</option>{% endfor %}</select></div>
<div><label for="due-filter">due within (days)</label><input type="number" id="due-filter" name="due" min="0" max="3650" value="{{ query.due_within_days if query.due_within_days is not none else '' }}"></div>
<div class="check"><input type="checkbox" id="overdue-filter" name="overdue" value="1"{% if query.overdue %} checked{% endif %}> <label for="overdue-filter">overdue only</label></div>
<input type="hidden" name="sort" value="{{ query.sort }}">{% if query.descending %}<input type="hidden" name="desc" value="1">{% endif %}
<div><button type="submit" id="apply-filters">Show</button> <a href="/console/board">clear</a></div></form>
<p id="board-summary">{{ total }} request(s) match{% if total %}; showing {{ first }} to {{ last }}{% endif %}.
<a id="csv" href="{{ csv_link }}">Download them as CSV</a> (recorded in the audit log).</p>
<table id="board"><caption>Erasure requests by {{ sort_label }} ({{ 'latest' if query.descending else 'earliest' }} first), page {{ query.page }} of {{ pages }}</caption>
<thead><tr>{% for key, label in columns %}<th scope="col"{% if key == query.sort %} aria-sort="{{ 'descending' if query.descending else 'ascending' }}"{% endif %}><a href="{{ sort_link(key) }}">{{ label }}{% if key == query.sort %} {{ '▼' if query.descending else '▲' }}{% endif %}</a></th>{% endfor %}</tr></thead><tbody>
{% for row in rows %}<tr data-request="{{ row.request.request_id }}">
<th scope="row"><a href="/console/requests/{{ row.request.request_id|urlencode }}">{{ row.request.request_id }}</a></th>
<td>{{ row.request.received_at.strftime('%Y-%m-%d') }}</td><td class="deadline">{{ row.request.deadline_at.strftime('%Y-%m-%d') }}</td>
<td class="num">{{ row.days_left }}{% if row.overdue %} <span class="overdue">OVERDUE</span>{% endif %}</td>
<td><span class="state state-{{ row.request.state.value }}">{{ request_label(row.request.state.value) }}</span></td>
<td class="num">{{ row.request.subjects }}</td>
<td>{{ row.request.last_action }} <span class="muted">({{ row.request.last_action_at.strftime('%Y-%m-%d %H:%M') }})</span></td></tr>
{% else %}<tr><td colspan="7">No request{% if filtered %} matches the filter{% endif %}.</td></tr>{% endfor %}
</tbody></table>
{{ pager(query.page, pages, page_link, "board", "request") }}
<p class="muted">Times in UTC; no subject value is shown anywhere in the console.</p>
{% endblock %}
"""
REQUEST = """{% extends "base.html" %}{% from "pager.html" import pager %}{% block title %}{{ request_id }}: piitracer console{% endblock %}{% block main %}
<h1>Request <span id="request-id">{{ request_id }}</span></h1>
{% set r = view.request %}
{% if steps_pages is not defined %}{% set steps_page, steps_at, steps_pages, steps_first, steps_last = view.steps, 1, 1, 1, view.steps|length %}
{% set audit_page, audit_at, audit_pages, audit_first, audit_last = view.entries, 1, 1, 1, view.entries|length %}{% endif %}
<table id="facts"><caption>What the request store and the audit log say of it</caption><tbody>
{% if r %}<tr><th scope="row">state</th><td><span class="state state-{{ r.state.value }}" id="request-state">{{ request_label(r.state.value) }}</span>
{% if r.overdue(now) %} <span class="overdue">OVERDUE</span>{% endif %}</td></tr>
<tr><th scope="row">received</th><td>{{ r.received_at.isoformat() }}</td></tr>
<tr><th scope="row">deadline</th><td>{{ r.deadline_at.isoformat() }} ({{ r.days_left(now) }} day(s) left)</td></tr>
<tr><th scope="row">subjects</th><td>{{ r.subjects }}</td></tr>
<tr><th scope="row">last action</th><td>{{ r.last_action }} ({{ r.last_action_at.isoformat(timespec='seconds') }})</td></tr>
{% if r.closed_at %}<tr><th scope="row">closed</th><td>{{ r.closed_at.isoformat(timespec='seconds') }}: data key {{ r.key_fingerprint }} destroyed</td></tr>{% endif %}
{% endif %}
{% if view.facts %}<tr><th scope="row">plan</th><td><code>{{ view.facts.plan_id[:16] }}</code>{% if view.facts.batched_with %}
(batched with {{ view.facts.batched_with|length }} other request(s)){% endif %}</td></tr>
<tr><th scope="row">sources</th><td>{{ view.facts.sources|join(', ') }}</td></tr>
<tr><th scope="row">deadline status</th><td>{{ view.facts.deadline.verdict }}: {{ view.facts.deadline.text }}</td></tr>{% endif %}
</tbody></table>
{% if view.facts %}<h2>Downloads</h2>
<ul id="downloads"><li><a id="report-download" href="/console/requests/{{ request_id|urlencode }}/report.html">the audit report (HTML)</a></li>
<li><a id="evidence-download" href="/console/requests/{{ request_id|urlencode }}/evidence.json">the evidence manifest (JSON)</a>: each
attestation's who, when and evidence SHA-256, and the latest verification (piitracer keeps only the hash of an owner's evidence, not the evidence)</li></ul>
<p class="muted">Every download is recorded in the audit log with who and when.</p>{% endif %}
{% if not view.facts %}<p>Not planned yet: the plan, its steps and its evidence appear here once it is.</p>{% else %}

<h2>Person steps</h2>
{% if view.open_steps %}<table id="open-steps"><caption>Person steps still open</caption><thead><tr><th scope="col">step</th><th scope="col">dataset</th><th scope="col">action</th><th scope="col">owner</th><th scope="col">state</th><th scope="col">attest</th></tr></thead><tbody>
{% for s in view.open_steps %}<tr data-step="{{ s.step_id }}"><th scope="row">{{ s.step_id }}</th><td>{{ s.dataset }}</td><td>{{ label(s.action) }}</td>
<td>{{ s.catalog_owner or 'no owner in the catalog' }}</td><td><span class="state state-{{ s.state|replace(' ', '_') }}">{{ label(s.state) }}</span></td><td>
{% if user.can_attest and s.owner == user.name and r and r.state.value != 'closed' %}
<form class="attest" method="post" action="/console/requests/{{ request_id|urlencode }}/attest" enctype="multipart/form-data">
<input type="hidden" name="csrf" value="{{ csrf }}"><input type="hidden" name="step_id" value="{{ s.step_id }}">
<label for="evidence-{{ s.step_id }}">evidence: a ticket, a run log, a statement (only its SHA-256 is kept)</label><br>
<textarea id="evidence-{{ s.step_id }}" name="evidence_text"></textarea><br>
<label for="file-{{ s.step_id }}">or a file</label> <input type="file" id="file-{{ s.step_id }}" name="evidence_file">
{% if user.credential is none %}<br><label for="token-{{ s.step_id }}">your token (it signs the attestation)</label> <input type="password" id="token-{{ s.step_id }}" name="token" autocomplete="current-password" required>{% endif %}
<button type="submit" class="attest-button">Attest as {{ user.name }}</button></form>
{% elif s.owner %}<span class="muted">to be attested by {{ s.owner }}</span>
{% else %}<span class="muted">no owner in the catalog: an owner attests it with their own token (<code>{{ commands.line('attest', step_id=s.step_id) or 'piitracer attest' }}</code>)</span>{% endif %}</td></tr>{% endfor %}
</tbody></table>{% else %}<p id="no-open-steps">No person step is open.</p>{% endif %}
{% set done = view.steps|selectattr('attested_by')|list %}
{% if done %}<table id="attested-steps"><caption>Person steps attested</caption><thead><tr><th scope="col">step</th><th scope="col">dataset</th><th scope="col">action</th><th scope="col">state</th><th scope="col">by</th></tr></thead><tbody>
{% for s in done %}<tr data-step="{{ s.step_id }}"><th scope="row">{{ s.step_id }}</th><td>{{ s.dataset }}</td><td>{{ label(s.action) }}</td>
<td><span class="state state-attested">{{ label('attested') }}</span></td><td>{{ s.attested_by }}</td></tr>{% endfor %}</tbody></table>{% endif %}

<h2>Certificate</h2>
{% if view.complete and certificate_available %}
<p><a id="certificate" href="/console/requests/{{ request_id|urlencode }}/certificate.json" download>Download the signed erasure certificate</a>
(issued now from the audit log, signed by the server's key; recorded in the audit log) and <a id="public-key" href="/console/signing-key.pub" download>its
public key</a>. Check it anywhere, without piitracer's secrets:</p>
<pre><code id="check-command">{{ commands.line('check_downloaded', certificate=certificate_file, public_key=public_key_name) or 'piitracer audit check-certificate' }}</code></pre>
{% elif view.complete %}<p>The erasure is proven; this server has no signing key, so issue the certificate with
<code id="certificate-command">{{ commands.line('certificate', request_id=request_id) or 'piitracer audit certificate' }}</code> and check it with
<code>{{ commands.line('check_certificate') or 'piitracer audit check-certificate' }}</code>.</p>
{% else %}<p id="no-certificate">No certificate yet: it is issued once the latest verification is complete.</p>{% endif %}

<h2>Plan</h2>
<table id="plan"><caption>Each dataset the plan reaches: its decision, key and erasure state</caption><thead><tr><th scope="col">dataset</th><th scope="col">format</th><th scope="col">decision</th><th scope="col">key column</th><th scope="col">rule</th><th scope="col">reason</th><th scope="col">state</th></tr></thead><tbody>
{% for d in view.facts.datasets %}<tr><th scope="row">{{ d.dataset }}</th><td>{{ d.format or '' }}</td><td>{{ label(d.status) }}</td><td>{{ d.key_column or '' }}</td>
<td>{{ d.rule or '' }}</td><td>{{ d.reason or '' }}</td><td><span class="state fill-{{ d.state }}">{{ label(d.state) }}</span></td></tr>{% endfor %}
</tbody></table>

<h2 id="steps-heading">Steps</h2>
<table id="steps"><caption>Steps {{ steps_first }} to {{ steps_last }} of {{ view.steps|length }}, in the order they run</caption><thead><tr><th scope="col">step</th><th scope="col">dataset</th><th scope="col">action</th><th scope="col">state</th></tr></thead><tbody>
{% for s in steps_page %}<tr data-step="{{ s.step_id }}"><th scope="row">{{ s.step_id }}</th><td>{{ s.dataset }}</td><td>{{ label(s.action) }}</td>
<td><span class="state state-{{ s.state|replace(' ', '_') }}">{{ label(s.state) }}</span></td></tr>{% endfor %}</tbody></table>
{{ pager(steps_at, steps_pages, steps_link, "steps", "step") }}

<h2>Latest verification</h2>
{% if view.verification %}<table id="verification"><caption>Per dataset, what the latest verification found</caption><thead><tr><th scope="col">dataset</th><th scope="col">state</th><th scope="col">files scanned</th><th scope="col">findings</th><th scope="col">how it was proven</th></tr></thead><tbody>
{% for v in view.verification %}<tr><th scope="row">{{ v.dataset }}</th><td><span class="state fill-{{ v.state }}">{{ label(v.state) }}</span></td>
<td class="num">{{ v.files_scanned }}</td><td class="num">{{ v.findings }}</td><td>{{ v.proven }}</td></tr>{% endfor %}
</tbody></table><p class="muted">checked at {{ view.verification[0].checked_at }}</p>{% else %}<p>Not verified yet.</p>{% endif %}
<h2>Lineage and erasure state</h2>
<figure id="lineage-figure" aria-labelledby="diagram-caption">
<figcaption id="diagram-caption">Lineage of the datasets the plan reaches, each coloured by its erasure state (listed in words below).</figcaption>
<ul class="legend" aria-label="Colour legend">{% for s, text in legend %}<li><span class="swatch fill-{{ s }}"></span>{{ text }}</li>{% endfor %}</ul>
{% if diagram %}<div class="diagram" id="diagram" role="img" tabindex="0" aria-label="Lineage diagram of {{ view.facts.datasets|length }} datasets; each dataset's erasure state is listed after the diagram">{{ diagram|safe }}</div>{% else %}<p class="muted">No diagram: {{ diagram_problem }}</p>{% endif %}
<ul id="diagram-text" aria-label="Each dataset's erasure state">{% for d in view.facts.datasets %}<li>{{ d.dataset }}: {{ label(d.state) }}</li>{% endfor %}</ul>
</figure>
{% endif %}

<h2 id="audit-heading">Audit trail</h2>
<table id="audit"><caption>Audit entries {{ audit_first }} to {{ audit_last }} of {{ view.entries|length }}</caption><thead><tr><th scope="col">seq</th><th scope="col">recorded</th><th scope="col">kind</th><th scope="col">what</th></tr></thead><tbody>
{% for e in audit_page %}<tr><th scope="row" class="num">{{ e.seq }}</th><td>{{ e.recorded_at }}</td><td>{{ e.kind }}</td><td>{{ e.action }}</td></tr>
{% else %}<tr><td colspan="4">Nothing recorded yet.</td></tr>{% endfor %}</tbody></table>
{{ pager(audit_at, audit_pages, audit_link, "audit", "audit trail") }}
{% endblock %}
"""

OWNER = """{% extends "base.html" %}{% block title %}{{ owner }}: piitracer console{% endblock %}{% block main %}
<h1>Steps waiting for <span id="owner">{{ owner }}</span></h1>
<p class="muted">Person steps of open requests on datasets whose catalog owner is {{ owner }}.</p>
<table id="waiting"><caption>Steps waiting for {{ owner }}'s attestation</caption><thead><tr><th scope="col">request</th><th scope="col">deadline</th><th scope="col">step</th><th scope="col">dataset</th><th scope="col">action</th></tr></thead><tbody>
{% for w in waiting %}<tr><th scope="row"><a href="/console/requests/{{ w.request_id|urlencode }}">{{ w.request_id }}</a></th>
<td>{{ w.deadline_at.strftime('%Y-%m-%d') }}{% if w.overdue %} <span class="overdue">OVERDUE</span>{% endif %}</td>
<td>{{ w.step.step_id }}</td><td>{{ w.step.dataset }}</td><td>{{ label(w.step.action) }}</td></tr>
{% else %}<tr><td colspan="5">Nothing is waiting for {{ owner }}.</td></tr>{% endfor %}</tbody></table>
{% endblock %}
"""

APPROVALS = """{% extends "base.html" %}{% block title %}Approvals: piitracer console{% endblock %}{% block main %}
<h1>Plans waiting for approval</h1>
{% if required %}<p>This workspace requires a second person's approval before a plan runs (<code>policy.approval: required</code>):
an approver who did not plan it approves it here or with <code>{{ commands.line('approve') or 'piitracer approve' }}</code>. Approvers: {{ approvers|join(', ') or 'none listed' }}.</p>
{% else %}<p>This workspace does not require approval (<code>policy.approval: none</code>): plans run without one; an approval given is still recorded.</p>{% endif %}
<table id="waiting-plans"><caption>Plans planned and not run, without an approval</caption><thead><tr><th scope="col">plan</th><th scope="col">planned by</th><th scope="col">planned at</th>
<th scope="col">requests</th><th scope="col">datasets erased from</th><th scope="col">steps</th><th scope="col">deadline</th></tr></thead><tbody>
{% for p in plans %}<tr data-plan="{{ p.plan_id }}"><th scope="row"><a href="/console/plans/{{ p.plan_id }}">{{ p.plan_id[:16] }}</a></th>
<td>{{ p.state.planned_by or 'not recorded' }}</td><td>{{ p.state.planned_at or '' }}</td><td class="num">{{ p.requests|length }}</td>
<td>{{ p.erased|map(attribute='dataset')|join(', ') }}</td><td class="num">{{ p.steps|length }}</td><td>{{ p.deadline_at[:10] }}</td></tr>
{% else %}<tr><td colspan="7">No plan is waiting for approval.</td></tr>{% endfor %}</tbody></table>
{% endblock %}
"""

PLAN = """{% extends "base.html" %}{% block title %}Plan {{ plan.plan_id[:16] }}: piitracer console{% endblock %}{% block main %}
<h1>Plan <code id="plan-id">{{ plan.plan_id[:16] }}</code></h1>
<table id="plan-facts"><caption>Who planned it, for which requests, and its approval</caption><tbody>
<tr><th scope="row">planned by</th><td id="planned-by">{{ plan.state.planned_by or 'not recorded' }}</td></tr>
<tr><th scope="row">planned at</th><td>{{ plan.state.planned_at or '' }}</td></tr>
<tr><th scope="row">why: the requests it erases</th><td>{% for r in plan.requests %}<a href="/console/requests/{{ r|urlencode }}">{{ r }}</a>{% if not loop.last %}, {% endif %}{% endfor %}</td></tr>
<tr><th scope="row">deadline</th><td>{{ plan.deadline_at }}</td></tr>
<tr><th scope="row">approval</th><td id="approval-state">{% if plan.state.approved %}approved by {{ plan.state.approved_by }}{% else %}waiting: who may approve: {{ plan.who_may_approve }}{% endif %}</td></tr>
</tbody></table>
{% if user.can_approve and not plan.state.approved %}
{% if user.name == plan.state.planned_by %}<p id="own-plan">You planned it: a second person approves it (who may: {{ plan.who_may_approve }}).</p>{% endif %}
<form method="post" action="/console/plans/{{ plan.plan_id }}/approve"><input type="hidden" name="csrf" value="{{ csrf }}">
{% if user.credential is none %}<label for="approve-token">your token (it signs the approval)</label> <input type="password" id="approve-token" name="token" autocomplete="current-password" required>{% endif %}
<button type="submit" id="approve">Approve as {{ user.name }}</button></form>
{% elif not user.can_approve %}<p class="muted">Only an approver (approvers: in piitracer.yaml) approves a plan.</p>{% endif %}
<h2>What it will delete</h2>
<table id="plan-datasets"><caption>Each dataset the plan reaches and why</caption><thead><tr><th scope="col">dataset</th><th scope="col">format</th><th scope="col">decision</th><th scope="col">key column</th><th scope="col">reason</th></tr></thead><tbody>
{% for d in plan.datasets %}<tr><th scope="row">{{ d.dataset }}</th><td>{{ d.format or '' }}</td><td>{{ label(d.status) }}</td><td>{{ d.key_column or '' }}</td><td>{{ d.reason or '' }}</td></tr>{% endfor %}
</tbody></table>
<table id="plan-estimate"><caption>Files and bytes each rewriting step may touch (estimated from table metadata and statistics, no row read)</caption><thead><tr><th scope="col">step</th><th scope="col">dataset</th><th scope="col">action</th><th scope="col">files</th><th scope="col">bytes</th><th scope="col">basis</th></tr></thead><tbody>
{% for e in plan.estimate %}<tr><th scope="row">{{ e.step_id }}</th><td>{{ e.dataset }}</td><td>{{ label(e.action) }}</td><td class="num">{{ e.files }}</td><td class="num">{{ '{:,}'.format(e.bytes) }}{% if e.upper_bound %} (at most){% endif %}</td><td>{{ e.basis }}</td></tr>
{% else %}<tr><td colspan="6">{{ plan.estimate_note or 'no estimate' }}</td></tr>{% endfor %}</tbody></table>
<table id="plan-steps"><caption>The {{ plan.steps|length }} steps, in the order they run</caption><thead><tr><th scope="col">step</th><th scope="col">dataset</th><th scope="col">action</th><th scope="col">owner</th></tr></thead><tbody>
{% for s in plan.steps %}<tr><th scope="row">{{ s.step_id }}</th><td>{{ s.dataset }}</td><td>{{ label(s.action) }}</td><td>{{ s.owner or '' }}</td></tr>{% endfor %}</tbody></table>
{% endblock %}
"""

ERROR = """{% extends "base.html" %}{% block title %}{{ status }}: piitracer console{% endblock %}{% block main %}
<h1>{{ status }}</h1><p><a href="/console/board">back to the board</a></p>{% endblock %}
"""

environment = Environment(
    loader=DictLoader({"base.html": BASE, "sign_in.html": SIGN_IN, "board.html": BOARD, "request.html": REQUEST,
                       "owner.html": OWNER, "error.html": ERROR, "pager.html": PAGER, "approvals.html": APPROVALS,
                       "plan.html": PLAN}),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True, lstrip_blocks=True,
)


def _globals() -> None:
    from piitracer.render.report_facts import request_state_label, state_label

    environment.globals.update(label=state_label, request_label=request_state_label)


_globals()


def render(name: str, **context) -> str:
    """One page, every value escaped (the lineage SVG, made by graphviz from catalog names, is the
    one piece marked safe)."""
    return environment.get_template(name).render(**context)
