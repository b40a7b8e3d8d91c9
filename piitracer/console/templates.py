"""The console's pages (Jinja2, every value escaped) and its one stylesheet.

Kept in Python rather than as package data: the pages travel with the code, and the Content
Security Policy allows only this server's own stylesheet (no inline style, no script at all).
"""

from __future__ import annotations

from jinja2 import DictLoader, Environment, select_autoescape

CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fafbfc}
header{background:#1f3a5f;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:bold} header .who{margin-left:auto;font-size:13px}
header form{display:inline;margin:0} header button{font-size:12px}
main{padding:16px 24px;max-width:1500px}
h1{font-size:21px;margin:8px 0} h2{font-size:16px;margin-top:26px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:8px 0;background:#fff}
th,td{border:1px solid #ccc;padding:4px 7px;text-align:left;vertical-align:top} th{background:#eef2f7}
td.num{text-align:right} code{font-family:Menlo,Consolas,monospace;font-size:12px}
.overdue{background:#f6b3b3;font-weight:bold;padding:1px 6px;border-radius:3px}
.state{padding:1px 6px;border-radius:3px;background:#eee}
.state-closed,.state-verified,.state-watching,.state-erased,.state-attested,.state-committed{background:#c8f0c8}
.state-awaiting_attestation,.state-pending,.state-executed,.state-executing,.state-planned{background:#ffe2a8}
.state-found{background:#f6b3b3}
.diagram{overflow:auto;max-height:900px;border:1px solid #ddd;padding:6px;background:#fff} .diagram svg{max-width:100%;height:auto}
.muted{color:#666;font-size:12px} .error{background:#fde2e2;border:1px solid #e99;padding:8px;margin:8px 0}
.notice{background:#e3f4e3;border:1px solid #9c9;padding:8px;margin:8px 0}
form.attest{margin:4px 0} form.attest textarea{width:26em;height:3em}
.signin{max-width:420px;margin:60px auto;background:#fff;border:1px solid #ccc;padding:20px}
.signin input[type=password]{width:100%;box-sizing:border-box;padding:6px}
.filters{margin:8px 0}
.swatch{display:inline-block;width:13px;height:13px;border:1px solid #888;vertical-align:middle;margin:0 3px 0 10px}
"""

BASE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{% block title %}piitracer console{% endblock %}</title>
<link rel="stylesheet" href="/console/static/console.css"></head><body>
<header><a href="/console/board">piitracer console</a>
{% if user %}{% if user.can_attest %}<a href="/console/owners/{{ user.name|urlencode }}">my steps</a>{% endif %}
<span class="who">signed in as <strong id="who">{{ user.name }}</strong> ({{ user.role }})
<form method="post" action="/console/sign-out"><input type="hidden" name="csrf" value="{{ csrf }}">
<button type="submit">sign out</button></form></span>{% endif %}</header>
<main>{% if error %}<p class="error" id="error">{{ error }}</p>{% endif %}
{% if notice %}<p class="notice" id="notice">{{ notice }}</p>{% endif %}
{% block main %}{% endblock %}</main></body></html>
"""

SIGN_IN = """{% extends "base.html" %}{% block title %}Sign in: piitracer console{% endblock %}{% block main %}
<div class="signin"><h1>piitracer console</h1>
<p>Erasure requests, their deadlines and evidence. Sign in with the token <code>{{ commands.line('owners_add') or 'piitracer owners add' }}</code>
printed for you.</p>
<form method="post" action="/console/sign-in"><input type="hidden" name="csrf" value="{{ csrf }}">
<label for="token">Token</label><br><input type="password" id="token" name="token" autocomplete="off" required>
<p><button type="submit" id="sign-in">Sign in</button></p></form></div>{% endblock %}
"""

BOARD = """{% extends "base.html" %}{% block title %}Requests: piitracer console{% endblock %}{% block main %}
<h1>Erasure requests</h1>
<form class="filters" method="get" action="/console/board">
<label>state <select name="state" id="state-filter"><option value="">any</option>
{% for s in states %}<option value="{{ s }}"{% if s == state %} selected{% endif %}>{{ s }}</option>{% endfor %}</select></label>
<label><input type="checkbox" name="overdue" value="1"{% if overdue %} checked{% endif %}> overdue only</label>
<button type="submit">filter</button></form>
<table id="board"><thead><tr><th>request</th><th>received</th><th>deadline</th><th>days left</th><th>state</th>
<th>subjects</th><th>last action</th></tr></thead><tbody>
{% for row in rows %}<tr data-request="{{ row.request.request_id }}">
<td><a href="/console/requests/{{ row.request.request_id|urlencode }}">{{ row.request.request_id }}</a></td>
<td>{{ row.request.received_at.strftime('%Y-%m-%d') }}</td><td class="deadline">{{ row.request.deadline_at.strftime('%Y-%m-%d') }}</td>
<td class="num">{{ row.days_left }}{% if row.overdue %} <span class="overdue">OVERDUE</span>{% endif %}</td>
<td><span class="state state-{{ row.request.state.value }}">{{ row.request.state.value }}</span></td>
<td class="num">{{ row.request.subjects }}</td>
<td>{{ row.request.last_action }} <span class="muted">({{ row.request.last_action_at.strftime('%Y-%m-%d %H:%M') }})</span></td></tr>
{% else %}<tr><td colspan="7">No request{% if state or overdue %} matches the filter{% endif %}.</td></tr>{% endfor %}
</tbody></table>
<p class="muted">{{ rows|length }} request(s); times in UTC; no subject value is shown anywhere in the console.</p>
{% endblock %}
"""

REQUEST = """{% extends "base.html" %}{% block title %}{{ request_id }}: piitracer console{% endblock %}{% block main %}
<h1>Request <span id="request-id">{{ request_id }}</span></h1>
{% set r = view.request %}
<table><tbody>
{% if r %}<tr><th>state</th><td><span class="state state-{{ r.state.value }}" id="request-state">{{ r.state.value }}</span>
{% if r.overdue(now) %} <span class="overdue">OVERDUE</span>{% endif %}</td></tr>
<tr><th>received</th><td>{{ r.received_at.isoformat() }}</td></tr>
<tr><th>deadline</th><td>{{ r.deadline_at.isoformat() }} ({{ r.days_left(now) }} day(s) left)</td></tr>
<tr><th>subjects</th><td>{{ r.subjects }}</td></tr>
<tr><th>last action</th><td>{{ r.last_action }} ({{ r.last_action_at.isoformat(timespec='seconds') }})</td></tr>
{% if r.closed_at %}<tr><th>closed</th><td>{{ r.closed_at.isoformat(timespec='seconds') }}: data key {{ r.key_fingerprint }} destroyed</td></tr>{% endif %}
{% endif %}
{% if view.facts %}<tr><th>plan</th><td><code>{{ view.facts.plan_id[:16] }}</code>{% if view.facts.batched_with %}
(batched with {{ view.facts.batched_with|length }} other request(s)){% endif %}</td></tr>
<tr><th>sources</th><td>{{ view.facts.sources|join(', ') }}</td></tr>
<tr><th>deadline status</th><td>{{ view.facts.deadline.verdict }}: {{ view.facts.deadline.text }}</td></tr>{% endif %}
</tbody></table>
{% if not view.facts %}<p>Not planned yet: the plan, its steps and its evidence appear here once it is.</p>{% else %}

<h2>Person steps</h2>
{% if view.open_steps %}<table id="open-steps"><thead><tr><th>step</th><th>dataset</th><th>action</th><th>owner</th><th>state</th><th></th></tr></thead><tbody>
{% for s in view.open_steps %}<tr data-step="{{ s.step_id }}"><td>{{ s.step_id }}</td><td>{{ s.dataset }}</td><td>{{ s.action }}</td>
<td>{{ s.catalog_owner or 'no owner in the catalog' }}</td><td><span class="state state-{{ s.state }}">{{ s.state }}</span></td><td>
{% if user.can_attest and s.owner == user.name and r and r.state.value != 'closed' %}
<form class="attest" method="post" action="/console/requests/{{ request_id|urlencode }}/attest" enctype="multipart/form-data">
<input type="hidden" name="csrf" value="{{ csrf }}"><input type="hidden" name="step_id" value="{{ s.step_id }}">
<textarea name="evidence_text" placeholder="evidence: a ticket, a run log, a statement (only its SHA-256 is kept)"></textarea><br>
or a file <input type="file" name="evidence_file"> <button type="submit" class="attest-button">Attest as {{ user.name }}</button></form>
{% elif s.owner %}<span class="muted">to be attested by {{ s.owner }}</span>
{% else %}<span class="muted">no owner in the catalog: a key holder attests it (<code>{{ commands.line('attest', step_id=s.step_id) or 'piitracer attest' }}</code>)</span>{% endif %}</td></tr>{% endfor %}
</tbody></table>{% else %}<p id="no-open-steps">No person step is open.</p>{% endif %}
{% set done = view.steps|selectattr('attested_by')|list %}
{% if done %}<table id="attested-steps"><thead><tr><th>step</th><th>dataset</th><th>action</th><th>state</th><th>by</th></tr></thead><tbody>
{% for s in done %}<tr data-step="{{ s.step_id }}"><td>{{ s.step_id }}</td><td>{{ s.dataset }}</td><td>{{ s.action }}</td>
<td><span class="state state-attested">attested</span></td><td>{{ s.attested_by }}</td></tr>{% endfor %}</tbody></table>{% endif %}

<h2>Certificate</h2>
{% if view.complete and certificate_available %}
<p><a id="certificate" href="/console/requests/{{ request_id|urlencode }}/certificate.json" download>Download the signed erasure certificate</a>
(issued now from the audit log, signed by the server's key) and <a id="public-key" href="/console/signing-key.pub" download>its
public key</a>. Check it anywhere, without piitracer's secrets:</p>
<pre><code id="check-command">{{ commands.line('check_downloaded', certificate=certificate_file, public_key=public_key_name) or 'piitracer audit check-certificate' }}</code></pre>
{% elif view.complete %}<p>The erasure is proven; this server has no signing key, so issue the certificate with
<code id="certificate-command">{{ commands.line('certificate', request_id=request_id) or 'piitracer audit certificate' }}</code> and check it with
<code>{{ commands.line('check_certificate') or 'piitracer audit check-certificate' }}</code>.</p>
{% else %}<p id="no-certificate">No certificate yet: it is issued once the latest verification is complete.</p>{% endif %}

<h2>Plan</h2>
<table id="plan"><thead><tr><th>dataset</th><th>format</th><th>decision</th><th>key column</th><th>rule</th><th>reason</th><th>state</th></tr></thead><tbody>
{% for d in view.facts.datasets %}<tr><td>{{ d.dataset }}</td><td>{{ d.format or '' }}</td><td>{{ d.status }}</td><td>{{ d.key_column or '' }}</td>
<td>{{ d.rule or '' }}</td><td>{{ d.reason or '' }}</td><td><span class="state state-{{ d.state }}">{{ d.state }}</span></td></tr>{% endfor %}
</tbody></table>

<h2>Steps</h2>
<table id="steps"><thead><tr><th>step</th><th>dataset</th><th>action</th><th>state</th></tr></thead><tbody>
{% for s in view.steps %}<tr><td>{{ s.step_id }}</td><td>{{ s.dataset }}</td><td>{{ s.action }}</td>
<td><span class="state state-{{ s.state }}">{{ s.state }}</span></td></tr>{% endfor %}</tbody></table>

<h2>Latest verification</h2>
{% if view.verification %}<table id="verification"><thead><tr><th>dataset</th><th>state</th><th>files scanned</th><th>findings</th><th>how it was proven</th></tr></thead><tbody>
{% for v in view.verification %}<tr><td>{{ v.dataset }}</td><td><span class="state state-{{ v.state }}">{{ v.state }}</span></td>
<td class="num">{{ v.files_scanned }}</td><td class="num">{{ v.findings }}</td><td>{{ v.proven }}</td></tr>{% endfor %}
</tbody></table><p class="muted">checked at {{ view.verification[0].checked_at }}</p>{% else %}<p>Not verified yet.</p>{% endif %}
<h2>Lineage and erasure state</h2>
<p class="muted">Node colour = erasure state: {% for s, label in legend %}<span class="swatch fill-{{ s }}"></span>{{ label }} {% endfor %}</p>
{% if diagram %}<div class="diagram" id="diagram">{{ diagram|safe }}</div>{% else %}<p class="muted">No diagram: {{ diagram_problem }}</p>{% endif %}
{% endif %}

<h2>Audit trail</h2>
<table id="audit"><thead><tr><th>seq</th><th>recorded</th><th>kind</th><th>what</th></tr></thead><tbody>
{% for e in view.entries %}<tr><td class="num">{{ e.seq }}</td><td>{{ e.recorded_at }}</td><td>{{ e.kind }}</td><td>{{ e.action }}</td></tr>
{% else %}<tr><td colspan="4">Nothing recorded yet.</td></tr>{% endfor %}</tbody></table>
{% endblock %}
"""

OWNER = """{% extends "base.html" %}{% block title %}{{ owner }}: piitracer console{% endblock %}{% block main %}
<h1>Steps waiting for <span id="owner">{{ owner }}</span></h1>
<p class="muted">Person steps of open requests on datasets whose catalog owner is {{ owner }}.</p>
<table id="waiting"><thead><tr><th>request</th><th>deadline</th><th>step</th><th>dataset</th><th>action</th></tr></thead><tbody>
{% for w in waiting %}<tr><td><a href="/console/requests/{{ w.request_id|urlencode }}">{{ w.request_id }}</a></td>
<td>{{ w.deadline_at.strftime('%Y-%m-%d') }}{% if w.overdue %} <span class="overdue">OVERDUE</span>{% endif %}</td>
<td>{{ w.step.step_id }}</td><td>{{ w.step.dataset }}</td><td>{{ w.step.action }}</td></tr>
{% else %}<tr><td colspan="5">Nothing is waiting for {{ owner }}.</td></tr>{% endfor %}</tbody></table>
{% endblock %}
"""

ERROR = """{% extends "base.html" %}{% block title %}{{ status }}: piitracer console{% endblock %}{% block main %}
<h1>{{ status }}</h1><p><a href="/console/board">back to the board</a></p>{% endblock %}
"""

environment = Environment(
    loader=DictLoader({"base.html": BASE, "sign_in.html": SIGN_IN, "board.html": BOARD, "request.html": REQUEST,
                       "owner.html": OWNER, "error.html": ERROR}),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True, lstrip_blocks=True,
)


def render(name: str, **context) -> str:
    """One page, every value escaped (the lineage SVG, made by graphviz from catalog names, is the
    one piece marked safe)."""
    return environment.get_template(name).render(**context)
