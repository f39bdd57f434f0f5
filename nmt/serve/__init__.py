"""Serving: trained runs in, a local web page and a JSON API out (`make serve`).

`runs`: the trained runs under runs/ a request may name, each loaded once (lazily) and shared
read-only by every request; `batcher`: requests that arrive together share one search; `app`:
the FastAPI app — `/` the page (static/: plain HTML, CSS and JavaScript, no build step, no
CDN), `/api/translate` (GET a text, POST a list of lines) the translations with their attention
and word links, `/api/runs` the runs, `/font` the CJK font the plots use too, `/docs` the API;
`schemas`: what the API takes and answers, as pydantic models; `errors`: every error a request
can cause answered as JSON {"error": ...}.
"""
