// hyocr serve's page: images queue up and run one after another through the server's own
// /v1/chat/completions, streamed; what the engine knows (the tasks and their official prompts,
// the spotting lines, Markdown as HTML, the server's state) comes from /web/api/…, so no rule
// is written twice. Nothing here is loaded from another origin.
import { strings, pickLanguage } from './strings.js';

const lang = pickLanguage(navigator.languages && navigator.languages.length ? navigator.languages
                                                                             : [navigator.language]);
const words = strings[lang];
const $ = (id) => document.getElementById(id);

function t(key, args = {}) {
    const s = words[key] ?? strings.en[key] ?? key;
    return s.replace(/\{(\w+)\}/g, (_, k) => String(args[k] ?? ''));
}

function translatePage() {
    document.documentElement.lang = lang;
    document.title = t('title');
    for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
    for (const el of document.querySelectorAll('[data-i18n-placeholder]'))
        el.placeholder = t(el.dataset.i18nPlaceholder);
    // shown by the style sheet while the element is empty
    for (const el of document.querySelectorAll('[data-i18n-empty]')) el.dataset.empty = t(el.dataset.i18nEmpty);
}

// ---- the key: asked once, kept in this tab's sessionStorage only --------------------------

const KEY = 'hyocr-api-key';
let keyWaiters = [];

function authHeaders() {
    const key = sessionStorage.getItem(KEY);
    return key ? { Authorization: `Bearer ${key}` } : {};
}

// Resolves once the user has given a key (the dialog stays until one is accepted).
function askKey(refused) {
    $('key-error').hidden = !refused;
    const d = $('key-dialog');
    if (!d.open) d.showModal();
    $('key').focus();
    return new Promise((resolve) => keyWaiters.push(resolve));
}

$('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('key').value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY, key);
    $('key-dialog').close();
    const waiting = keyWaiters;
    keyWaiters = [];
    for (const w of waiting) w();
});
$('key-dialog').addEventListener('cancel', (e) => e.preventDefault());

// fetch with the key; a 401 asks for it (again) and retries.
async function api(path, options = {}) {
    for (;;) {
        const sent = authHeaders();
        const res = await fetch(path, { ...options, headers: { ...(options.headers || {}), ...sent } });
        if (res.status !== 401) return res;
        sessionStorage.removeItem(KEY);
        await askKey('Authorization' in sent);
    }
}

// The server's error message (OpenAI's shape), or the status line.
async function errorOf(res) {
    try {
        const body = await res.json();
        return { message: body.error?.message || res.statusText, code: body.error?.code };
    } catch {
        return { message: `${res.status} ${res.statusText}`, code: null };
    }
}

// ---- the server's state --------------------------------------------------------------------

function formatBytes(n) {
    if (!n) return '0';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

let statusTimer = null;
let maxRequest = 0;   // the server's --max-request-size, from its status

async function refreshStatus() {
    clearTimeout(statusTimer);
    const el = $('status');
    try {
        const res = await api('/web/api/status');
        const s = await res.json();
        maxRequest = s.max_request_size || 0;
        el.dataset.state = s.state;
        el.textContent = s.state === 'ready' ? t('status_ready', { model: s.model, backend: String(s.backend).toUpperCase(),
                                                                   running: s.running, waiting: s.waiting,
                                                                   memory: formatBytes(s.memory_used) })
                       : t(s.state === 'loading' ? 'status_loading' : 'status_draining');
    } catch {
        el.dataset.state = 'gone';
        el.textContent = t('status_gone');
    }
    statusTimer = setTimeout(refreshStatus, running ? 2000 : 5000);
}

// ---- tasks ---------------------------------------------------------------------------------

let tasks = [];

function currentTask() {
    return tasks.find((x) => x.name === $('task').value);
}

function showTask() {
    const task = currentTask();
    if (!task) return;
    $('fields-row').hidden = task.input !== 'fields';
    $('custom-row').hidden = task.input !== 'prompt';
    $('task-prompt').textContent = task.prompt || '';
    $('task-prompt').hidden = !task.prompt;
}

async function loadTasks() {
    const res = await api('/web/api/tasks');
    tasks = (await res.json()).tasks;
    const select = $('task');
    select.replaceChildren(...tasks.map((x) => {
        const o = document.createElement('option');
        o.value = x.name;
        o.textContent = words[`task_${x.name}`] ? t(`task_${x.name}`) : x.name;
        return o;
    }));
    showTask();
}

// The text sent for the task, as the engine words it (the fields' list, the custom prompt).
async function promptFor(task) {
    if (!task.input) return task.prompt;
    const body = { task: task.name };
    if (task.input === 'fields') body.fields = $('fields').value.split(/[,，]/).map((f) => f.trim()).filter(Boolean);
    else body.prompt = $('custom').value;
    if (task.input === 'fields' && body.fields.length === 0) throw new PageError(t('err_fields'));
    if (task.input === 'prompt' && !body.prompt.trim()) throw new PageError(t('err_prompt'));
    const res = await api('/web/api/prompt', { method: 'POST', body: JSON.stringify(body),
                                               headers: { 'Content-Type': 'application/json' } });
    if (!res.ok) throw new PageError((await errorOf(res)).message);
    return (await res.json()).prompt;
}

class PageError extends Error {}

// ---- the queue -----------------------------------------------------------------------------

const items = [];     // { id, file, name, url, state, text, task, prompt, lines, finish }
let selected = null;
let running = null;   // { item, controller }
let nextId = 1;

function addFiles(files) {
    for (const file of files) {
        const item = { id: nextId++, file, name: file.name || 'pasted image', url: URL.createObjectURL(file),
                       state: 'waiting', text: '', lines: [] };
        items.push(item);
        if (!selected) selected = item;
    }
    renderQueue();
    showItem(selected);
}

function renderQueue() {
    $('queue-empty').hidden = items.length > 0;
    $('queue').replaceChildren(...items.map((item) => {
        const li = document.createElement('li');
        li.dataset.id = item.id;
        li.dataset.state = item.state;
        li.setAttribute('aria-current', item === selected ? 'true' : 'false');
        const name = document.createElement('button');
        name.className = 'name';
        name.textContent = item.name;
        name.addEventListener('click', () => { selected = item; renderQueue(); showItem(item); });
        const state = document.createElement('span');
        state.className = 'state';
        state.textContent = t(`state_${item.state}`);
        const remove = document.createElement('button');
        remove.className = 'remove';
        remove.textContent = '×';
        remove.title = t('remove');
        remove.setAttribute('aria-label', `${t('remove')} ${item.name}`);
        remove.disabled = running?.item === item;
        remove.addEventListener('click', () => removeItem(item));
        li.append(name, state, remove);
        return li;
    }));
    $('run').disabled = items.length === 0 || running !== null;
    $('cancel').disabled = running === null;
}

function removeItem(item) {
    items.splice(items.indexOf(item), 1);
    URL.revokeObjectURL(item.url);
    if (selected === item) selected = items[0] || null;
    renderQueue();
    showItem(selected);
}

// ---- showing one item ----------------------------------------------------------------------

let view = 'text';

function showMessage(text) {
    $('message').textContent = text || '';
    $('message').hidden = !text;
}

function showItem(item) {
    $('preview').hidden = !item;
    if (!item) {
        $('output').textContent = '';
        showMessage('');
        updateActions(null);
        return;
    }
    if ($('image').src !== item.url) $('image').src = item.url;
    $('output').textContent = item.text;
    showMessage(item.message || '');
    drawBoxes(item);
    const markdown = tasks.find((x) => x.name === item.task)?.markdown;
    $('tab-rendered').disabled = !markdown || !item.text;
    if (view === 'rendered' && $('tab-rendered').disabled) setView('text');
    else if (view === 'rendered') renderMarkdown(item);
    updateActions(item);
}

function updateActions(item) {
    const has = Boolean(item && item.text);
    for (const id of ['copy', 'dl-txt', 'dl-md', 'dl-json']) $(id).disabled = !has;
}

function drawBoxes(item) {
    $('boxes').replaceChildren(...(item.lines || []).map((l) => {
        const [x1, y1, x2, y2] = l.box;
        const b = document.createElement('div');
        b.className = 'box';
        b.title = l.text;
        // the model's 0…1000 scale of the image it saw, which keeps the image's proportions
        b.style.left = `${x1 / 10}%`;
        b.style.top = `${y1 / 10}%`;
        b.style.width = `${(x2 - x1) / 10}%`;
        b.style.height = `${(y2 - y1) / 10}%`;
        return b;
    }));
}

function setView(v) {
    view = v;
    $('tab-text').setAttribute('aria-selected', String(v === 'text'));
    $('tab-rendered').setAttribute('aria-selected', String(v === 'rendered'));
    $('output').hidden = v !== 'text';
    $('rendered').hidden = v !== 'rendered';
    if (v === 'rendered' && selected) renderMarkdown(selected);
}

// The frame's load event marks the body "rendered" (before it, its parser may have shown a part).
async function renderMarkdown(item) {
    delete document.body.dataset.rendered;
    const res = await api('/web/api/render', { method: 'POST', body: item.text,
                                               headers: { 'Content-Type': 'text/plain; charset=utf-8' } });
    if (!res.ok) {
        showMessage(t('render_unavailable'));
        setView('text');
        return;
    }
    const html = await res.text();
    if (selected !== item) return;
    // the model's HTML, in a frame that runs no script, under this page's policy
    $('rendered').srcdoc = '<!DOCTYPE html><html><head><meta charset="utf-8">' +
                           '<link rel="stylesheet" href="/web/render.css"></head><body>' + html + '</body></html>';
}

$('rendered').addEventListener('load', () => {
    const doc = $('rendered').contentDocument;
    if (doc) $('rendered').style.height = `${doc.documentElement.scrollHeight + 16}px`;
    if ($('rendered').srcdoc) document.body.dataset.rendered = 'true';
});
$('tab-text').addEventListener('click', () => setView('text'));
$('tab-rendered').addEventListener('click', () => setView('rendered'));

// ---- running -------------------------------------------------------------------------------

function readAsDataURL(file) {
    return new Promise((resolve, reject) => {
        const r = new FileReader();
        r.onload = () => resolve(r.result);
        r.onerror = () => reject(r.error);
        r.readAsDataURL(file);
    });
}

// The spotting lines of the answer so far, parsed by the engine; one request at a time.
function refreshLines(item) {
    if (item.task !== 'spotting') return;
    if (item.linesBusy) { item.linesAgain = true; return; }
    item.linesBusy = true;
    api('/web/api/spotting', { method: 'POST', body: item.text,
                               headers: { 'Content-Type': 'text/plain; charset=utf-8' } })
        .then((res) => res.ok ? res.json() : { lines: item.lines })
        .then((r) => { item.lines = r.lines; if (selected === item) drawBoxes(item); })
        .catch(() => {})
        .finally(() => {
            item.linesBusy = false;
            if (item.linesAgain) { item.linesAgain = false; refreshLines(item); }
            else if (item.state !== 'running') document.body.dataset.lines = String(item.id);
        });
}

function errorWords(item, err) {
    if (err.code === 'invalid_image') return t('err_not_image', { name: item.name, detail: err.message });
    if (err.status === 413) return t('err_too_big', { name: item.name, detail: err.message });
    if (err.code === 'insufficient_memory') return t('err_memory', { name: item.name, detail: err.message });
    if (err.status === 503) return t('err_busy', { detail: err.message });
    return t('err_server', { name: item.name, detail: err.message });
}

// One item through /v1/chat/completions, its answer streamed into the page.
async function runItem(item, task, prompt, maxTokens, controller) {
    // sent as base64 in JSON: 4/3 of the file and a little; a file that cannot fit is not read
    const overhead = 4096 + new TextEncoder().encode(prompt).length;
    if (maxRequest && Math.ceil(item.file.size / 3) * 4 + overhead > maxRequest)
        throw new PageError(t('err_too_big_local', { name: item.name, size: formatBytes(item.file.size),
                                                     limit: formatBytes((maxRequest - overhead) * 3 / 4) }));
    let dataUrl;
    try {
        dataUrl = await readAsDataURL(item.file);
    } catch (e) {
        throw new PageError(t('err_read', { name: item.name, detail: e.message }));
    }
    const body = {
        messages: [{ role: 'system', content: '' },
                   { role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl } },
                                             { type: 'text', text: prompt }] }],
        stream: true,
    };
    if (maxTokens > 0) body.max_tokens = maxTokens;
    let res;
    try {
        res = await api('/v1/chat/completions', { method: 'POST', body: JSON.stringify(body), signal: controller.signal,
                                                  headers: { 'Content-Type': 'application/json' } });
    } catch (e) {
        if (e.name === 'AbortError') throw e;
        throw new PageError(t('err_gone'));
    }
    if (!res.ok) {
        const err = await errorOf(res);
        err.status = res.status;
        throw new PageError(errorWords(item, err));
    }
    await readStream(item, res.body, controller);
}

// Server-sent events: "data: {chunk}" separated by blank lines, ending with "data: [DONE]".
async function readStream(item, stream, controller) {
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
        let chunk;
        try {
            chunk = await reader.read();
        } catch (e) {
            if (controller.signal.aborted) throw e;
            throw new PageError(t('err_gone'));
        }
        if (chunk.done) break;
        buffer += chunk.value;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            for (const line of event.split('\n')) {
                if (!line.startsWith('data: ')) continue;
                const data = line.slice(6);
                if (data === '[DONE]') return;
                const obj = JSON.parse(data);
                if (obj.error) throw new PageError(errorWords(item, obj.error));
                const choice = obj.choices?.[0];
                if (choice?.finish_reason) item.finish = choice.finish_reason;
                const piece = choice?.delta?.content;
                if (piece) {
                    item.text += piece;
                    if (selected === item) { $('output').textContent = item.text; updateActions(item); }
                    if (piece.includes(')')) refreshLines(item);
                }
            }
        }
    }
    throw new PageError(t('err_gone'));   // the stream ended without [DONE]
}

async function runQueue() {
    const task = currentTask();
    let prompt;
    try {
        prompt = await promptFor(task);
    } catch (e) {
        showMessage(e instanceof PageError ? e.message : t('err_gone'));
        return;
    }
    const maxTokens = parseInt($('max-tokens').value, 10) || 0;
    // the waiting images; with none, the one shown runs again (with this task)
    let todo = items.filter((x) => x.state === 'waiting');
    if (todo.length === 0 && selected) todo = [selected];
    if (todo.length === 0) { showMessage(t('no_image')); return; }
    for (const item of todo) {
        if (!items.includes(item)) continue;
        const controller = new AbortController();
        running = { item, controller };
        Object.assign(item, { state: 'running', text: '', lines: [], message: '', task: task.name, prompt,
                              finish: null });
        document.body.dataset.running = String(item.id);
        selected = item;
        renderQueue();
        showItem(item);
        refreshStatus();
        try {
            await runItem(item, task, prompt, maxTokens, controller);
            item.state = 'done';
        } catch (e) {
            item.state = controller.signal.aborted ? 'cancelled' : 'failed';
            item.message = controller.signal.aborted ? t('cancelled', { name: item.name })
                         : e instanceof PageError ? e.message : t('err_server', { name: item.name, detail: e.message });
        }
        running = null;
        delete document.body.dataset.running;
        document.body.dataset.finished = `${item.id}:${item.state}`;
        refreshLines(item);
        renderQueue();
        if (selected === item) showItem(item);
        refreshStatus();
        if (item.state === 'cancelled') break;
    }
}

$('run').addEventListener('click', () => { if (!running) runQueue(); });
// aborting the fetch closes the connection: the server cancels the job
$('cancel').addEventListener('click', () => running?.controller.abort());

// ---- adding images: choose, drop, paste ----------------------------------------------------

$('file').addEventListener('change', () => { addFiles([...$('file').files]); $('file').value = ''; });
const drop = $('drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    addFiles([...e.dataTransfer.files]);
});
document.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files || [])];
    if (files.length) { e.preventDefault(); addFiles(files); }
});

// ---- copy, download ------------------------------------------------------------------------

function baseName(item) {
    return item.name.replace(/\.[^.]*$/, '') || 'hyocr';
}

function download(item, ext) {
    let data = item.text, type = 'text/plain';
    if (ext === 'md') type = 'text/markdown';
    if (ext === 'json') {
        type = 'application/json';
        const out = { image: item.name, task: item.task, prompt: item.prompt, text: item.text,
                      finish_reason: item.finish };
        if (item.task === 'spotting') out.lines = item.lines;
        data = JSON.stringify(out, null, 2) + '\n';
    }
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([data], { type: `${type};charset=utf-8` }));
    a.download = `${baseName(item)}.${ext}`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}

async function copy(text) {
    try {
        await navigator.clipboard.writeText(text);
    } catch {
        // plain HTTP to another host is no secure context: no clipboard API
        const area = document.createElement('textarea');
        area.value = text;
        document.body.append(area);
        area.select();
        document.execCommand('copy');
        area.remove();
    }
    $('copied').hidden = false;
    setTimeout(() => { $('copied').hidden = true; }, 2000);
}

$('copy').addEventListener('click', () => selected && copy(selected.text));
for (const ext of ['txt', 'md', 'json']) $(`dl-${ext}`).addEventListener('click', () => selected && download(selected, ext));
$('task').addEventListener('change', showTask);

// ---- start ---------------------------------------------------------------------------------

translatePage();
renderQueue();
showItem(null);
setView('text');
refreshStatus();
loadTasks().then(() => { document.body.dataset.ready = 'true'; })
           .catch(() => showMessage(t('err_gone')));
