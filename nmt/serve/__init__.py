"""Serving: trained runs in, a local web page and a JSON API out (`make serve`).

`runs`: the trained runs under runs/ a request may name, each loaded once (lazily) and shared
read-only by every request; `batcher`: requests that arrive together share one search; `app`:
the FastAPI app — `/` the page (static/: plain HTML, CSS and JavaScript, no build step, no
CDN), `/api/translate` the translations with their attention and word links, `/api/runs` the
runs, `/font` the CJK font the plots use too.
"""
