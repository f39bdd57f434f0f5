// The page: ask /api/translate, then draw for each line its n-best list, the attention heatmap
// (rows: English words, columns: Chinese words) and the word links between the two sentences.
// Hovering a word lights up what it attended to, or what attended to it. Plain JS, no build.
"use strict";

const $ = (id) => document.getElementById(id);

function element(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text) node.textContent = text;
  return node;
}

async function loadRuns() {
  const answer = await (await fetch("/api/runs")).json();
  for (const run of answer.runs) {
    const option = element("option", { value: run }, run);
    if (run === answer.default) option.selected = true;
    $("run").append(option);
  }
  loadSearch();
}

// The run's own beam and n-best (its decoding plan's, tuned where make tune ran) fill the
// fields: what the server uses when they are left empty. A run still loading is asked again.
async function loadSearch() {
  const run = $("run").value;
  $("search").textContent = "";
  let response;
  try {
    response = await fetch(`/api/runs/${encodeURIComponent(run)}`);
  } catch (error) {
    return;  // the server is gone: translating will say so
  }
  if ($("run").value !== run) return;  // another run was picked meanwhile
  if (response.status === 503) {
    $("search").textContent = "loading the model…";
    setTimeout(loadSearch, 1000 * Number(response.headers.get("Retry-After") || 2));
    return;
  }
  const answer = await response.json();
  if (!response.ok) {
    $("status").className = "error";
    $("status").textContent = answer.error;
    return;
  }
  $("beam").value = answer.search.beam;
  $("nbest").value = answer.search.nbest;
  $("search").textContent = `the run's search: beam ${answer.search.beam}, n-best ${answer.search.nbest}`;
}

// The page asks for everything it draws: the attention (every layer and head) and the links.
function translateQuery() {
  const query = new URLSearchParams({ text: $("text").value, run: $("run").value,
                                      attention: true, links: true });
  const beam = $("beam").value, nbest = $("nbest").value;  // left empty: the run's own
  if (beam) query.set("beam", beam);
  if (nbest) query.set("nbest", beam ? Math.min(Number(nbest), Number(beam)) : nbest);
  return query;
}

async function translate(event) {
  event.preventDefault();
  const query = translateQuery();
  $("status").className = "";
  $("status").textContent = "translating…";
  let response, answer;
  try {
    response = await fetch(`/api/translate?${query}`);
    answer = await response.json();
  } catch (error) {  // the server is gone, or answered something that is not JSON
    answer = { error: `no answer from the server (${error.message})` };
  }
  if (!response || !response.ok || answer.error) {
    $("status").className = "error";
    $("status").textContent = answer.error || `the server answered ${response.status}`;  // every error is {"error": ...}
    return;
  }
  $("status").textContent = `${answer.run} (${answer.architecture}) · ${answer.model} · `
                          + `beam ${answer.search.beam}, n-best ${answer.search.nbest}`;
  $("results").replaceChildren(...answer.lines.map(drawLine));
}

function drawLine(line) {
  const box = element("section", { class: "line" });
  box.append(element("p", { class: "translation" }, line.translation));
  const nbest = element("ol", { class: "nbest", start: 2 });  // the best one is the line above
  for (const { text, score } of line.nbest.slice(1)) nbest.append(element("li", {}, `${text} (${score})`));
  box.append(nbest);
  if (!line.attention) {  // a line of nothing the model reads has no attention either
    box.append(element("p", {}, line.source_tokens.length ? "This model has no attention (model.attention = none)."
                                                          : "Nothing to translate on this line."));
    return box;
  }
  const views = element("div", { class: "views" });
  const heatmap = drawHeatmap(line);
  const links = drawLinks(line);
  if (line.layers) box.append(drawPickers(line, heatmap));
  views.append(heatmap.table, links.box);
  box.append(views);
  connectHover(box, line);
  requestAnimationFrame(() => links.draw());
  return box;
}

// Every cell's colour is its weight; `show(weights)` repaints with another layer or head.
function drawHeatmap(line) {
  const table = element("table", { class: "heatmap" });
  const head = table.appendChild(element("thead")).appendChild(element("tr"));
  head.append(element("th"));
  line.source_tokens.forEach((token, j) => head.append(element("th", { "data-source": j }, token)));
  const body = table.appendChild(element("tbody"));
  const cells = line.target_tokens.map((token, i) => {
    const row = body.appendChild(element("tr"));
    row.append(element("th", { "data-target": i }, token));
    return line.source_tokens.map((_, j) => row.appendChild(element("td", { class: "cell", "data-target": i, "data-source": j })));
  });
  // Shaded relative to the largest weight shown, so that a flat matrix still shows its shape.
  const show = (weights) => {
    const top = Math.max(...weights.flat(), 1e-9);
    cells.forEach((row, i) => row.forEach((cell, j) => paint(cell, i, j, weights[i][j], top)));
  };
  const paint = (cell, i, j, w, top) => {
    cell.style.background = `rgba(21, 101, 192, ${(w / top).toFixed(3)})`;
    cell.title = `${line.target_tokens[i]} → ${line.source_tokens[j]}: ${w.toFixed(3)}`;
  };
  show(line.attention);
  return { table, show };
}

// The two sentences, with a line for each link [source j, target i] between them.
function drawLinks(line) {
  const box = element("div", { class: "links" });
  const top = element("div", { class: "row source" });
  line.source_tokens.forEach((t, j) => top.append(element("span", { class: "token", "data-source": j }, t)));
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("height", "70");
  const bottom = element("div", { class: "row target" });
  line.target_tokens.forEach((t, i) => bottom.append(element("span", { class: "token", "data-target": i }, t)));
  box.append(top, svg, bottom);
  const draw = () => {
    const width = Math.max(top.scrollWidth, bottom.scrollWidth);
    svg.setAttribute("width", width);
    const origin = box.getBoundingClientRect().left;
    const centre = (span) => { const r = span.getBoundingClientRect(); return r.left + r.width / 2 - origin; };
    for (const [j, i] of line.links) {
      const link = document.createElementNS("http://www.w3.org/2000/svg", "line");
      link.setAttribute("x1", centre(top.children[j])); link.setAttribute("y1", 0);
      link.setAttribute("x2", centre(bottom.children[i])); link.setAttribute("y2", 70);
      link.dataset.source = j; link.dataset.target = i;
      svg.append(link);
    }
  };
  return { box, draw };
}

// A Transformer: which decoder layer and head the heatmap shows (average: the model's alignment).
function drawPickers(line, heatmap) {
  const pickers = element("div", { class: "pickers" });
  const layer = element("select", { class: "layer" });
  const head = element("select", { class: "head" });
  layer.append(element("option", { value: "" }, "alignment (heads averaged)"));
  line.layers.forEach((_, l) => layer.append(element("option", { value: l }, `layer ${l}`)));
  head.append(element("option", { value: "" }, "heads averaged"));
  line.layers[0].forEach((_, h) => head.append(element("option", { value: h }, `head ${h}`)));
  const update = () => {
    if (layer.value === "") return heatmap.show(line.attention);
    const heads = line.layers[Number(layer.value)];
    const mean = (i, j) => heads.reduce((sum, w) => sum + w[i][j], 0) / heads.length;
    heatmap.show(head.value === "" ? line.attention.map((row, i) => row.map((_, j) => mean(i, j)))
                                   : heads[Number(head.value)]);
  };
  layer.onchange = head.onchange = update;
  pickers.append(element("label", {}, "layer "), layer, element("label", {}, "head "), head);
  return pickers;
}

// Hover an English word: its row and the Chinese words it attends to most light up (weight at
// least half its largest); hover a Chinese word: the English words that attend to it most.
function connectHover(box, line) {
  const clear = () => box.querySelectorAll(".highlight, .active").forEach((n) => n.classList.remove("highlight", "active"));
  const light = (selector) => box.querySelectorAll(selector).forEach((n) => n.classList.add("highlight"));
  box.querySelectorAll("[data-target]:not(td):not(line)").forEach((node) => {
    const i = Number(node.dataset.target);
    node.onmouseenter = () => {
      clear();
      box.querySelectorAll(`[data-target="${i}"]:not(td):not(line)`).forEach((n) => n.classList.add("active"));
      const row = line.attention[i], top = Math.max(...row);
      row.forEach((w, j) => { if (w >= top / 2) light(`[data-source="${j}"]:not(td):not(line)`); });
      light(`line[data-target="${i}"]`);
    };
    node.onmouseleave = clear;
  });
  box.querySelectorAll("[data-source]:not(td):not(line)").forEach((node) => {
    const j = Number(node.dataset.source);
    node.onmouseenter = () => {
      clear();
      box.querySelectorAll(`[data-source="${j}"]:not(td):not(line)`).forEach((n) => n.classList.add("active"));
      line.attention.forEach((row, i) => { if (row[j] >= Math.max(...row) / 2) light(`[data-target="${i}"]:not(td):not(line)`); });
      light(`line[data-source="${j}"]`);
    };
    node.onmouseleave = clear;
  });
}

$("form").addEventListener("submit", translate);
$("run").addEventListener("change", loadSearch);
loadRuns();
