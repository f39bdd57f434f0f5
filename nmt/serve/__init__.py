"""Serving: trained runs in, a local web page and a JSON API out (`make serve`).

`runs`: the trained runs under runs/ a request may name, each loaded on first use (at most
serve.max_runs at once) and shared read-only by every request; `batcher`: each run's one
decoding thread, where requests that arrive together share one search; `answers`: what that
thread makes of a search, with the attention and links a request asks for; `app`:
the FastAPI app — `/` the page (static/: plain HTML, CSS and JavaScript, no build step, no
CDN), `/api/translate` (GET a text, POST a list of lines) the translations with their attention
and word links, `/api/runs` the runs, `/font` the CJK font the plots use too, `/docs` the API;
`schemas`: what the API takes and answers, as pydantic models; `errors`: every error a request
can cause answered as JSON {"error": ...}.
"""
