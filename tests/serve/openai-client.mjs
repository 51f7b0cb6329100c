// The official OpenAI Node client (npm "openai", the version pinned in package.json)
// against hyocr serve, on the 1.5-layout fixture checkpoint: for every task preset,
// the request Tencent's client sends (an empty system message, then the image and
// the task's prompt), non-streaming and streaming; the tokens and the text equal
// what `hyocr run --task NAME` gives for the same image and parameters. TAP output.
//
//     node tests/serve/openai-client.mjs HYOCR DATA_DIR
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const OpenAI = await import('openai').then((m) => m.default).catch(() => {
  console.log('Bail out! the openai package is not installed: run .ci/setup (it runs npm ci in tests/serve)');
  process.exit(1);
});
const [hyocr, data] = process.argv.slice(2);
const model = `${data}/ckpt-nested`;
const image = `${data}/images/odd_137x91.png`;
const MAX_TOKENS = 32;
const KEY = 'test-key-0123';

// The task presets of hyocr (src/engine/prompt.c) with the official 1.5 prompts a
// client sends for them.
const presets = [
  ['recognize', '提取图中的文字。'],
  ['spotting', '检测并识别图片中的文字，将文本坐标格式化输出。'],
  ['parse_document', '提取文档图片中正文的所有信息用markdown格式表示，其中页眉、页脚部分忽略，表格用html格式表达，文档中公式用latex格式表示，按照阅读顺序组织进行解析。'],
  ['parse_table', '把图中的表格解析为HTML。'],
  ['parse_formula', '识别图片中的公式，用LaTeX格式表示。'],
  ['parse_chart', '解析图中的图表，对于流程图使用Mermaid格式表示，其他图表使用Markdown格式表示。'],
  ['translate_zh', '按照阅读顺序，提取图中文字，公式用latex格式表示，表格用markdown格式表示，再将文字内容翻译为中文。'],
  ['translate_en', '按照阅读顺序，提取图中文字，公式用latex格式表示，表格用markdown格式表示，再将文字内容翻译为英文。'],
  ['extract_fields', "提取图片中的: ['姓名', 'date', 'total'] 的字段内容，并按照 JSON 格式返回。", ['--fields', '姓名,date,total']],
  ['subtitles', '提取图片中的字幕。'],
];

let n = 0, failed = 0;
function check(name, cond, detail) {
  n++;
  if (cond) { console.log(`ok ${n} - ${name}`); return; }
  failed++;
  console.log(`not ok ${n} - ${name}`);
  if (detail !== undefined) for (const l of String(detail).split('\n')) console.log(`# ${l}`);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function startServer() {
  const proc = spawn(hyocr, ['serve', '--model', model, '--device', 'cpu', '--threads', '2', '--port', '0',
                             '--served-model-name', 'hyocr-test', '--api-key', KEY],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let port = 0;
    const lines = createInterface({ input: proc.stderr });
    lines.on('line', (line) => {
      const m = line.match(/listening on http:\/\/[0-9.]+:(\d+)/);
      if (m) port = Number(m[1]);
      if (/ready/.test(line)) resolve({ proc, port });
    });
    proc.on('exit', (code) => reject(new Error(`hyocr serve exited with ${code} before it was ready`)));
  });
}

function runCli(task, extra) {
  const out = execFileSync(hyocr, ['run', '--model', model, '--device', 'cpu', '--threads', '2', '--image', image,
                                   '--task', task, ...(extra || []), '-n', String(MAX_TOKENS), '--format', 'json'],
                           { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const r = JSON.parse(out);
  return Array.isArray(r) ? r[0] : r;   // hyocr run writes one result per image
}

const url = 'data:image/png;base64,' + readFileSync(image).toString('base64');
function messages(prompt) {
  return [
    { role: 'system', content: '' },
    { role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'text', text: prompt }] },
  ];
}

const { proc, port } = await startServer();
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0 });
try {
  const models = await client.models.list();
  check('models.list() names the served model', same(models.data.map((m) => m.id), ['hyocr-test']));

  for (const [task, prompt, extra] of presets) {
    const want = runCli(task, extra);
    // return_token_ids and repetition_penalty are vLLM's extra body fields; the client passes them through
    const params = { model: 'hyocr-test', messages: messages(prompt), max_tokens: MAX_TOKENS, temperature: 0,
                     repetition_penalty: 1.08, return_token_ids: true };
    const r = await client.chat.completions.create(params);
    const c = r.choices[0];
    check(`${task}: chat.completions.create gives hyocr run's tokens`, same(c.token_ids, want.token_ids),
          `server ${JSON.stringify(c.token_ids)}\nrun    ${JSON.stringify(want.token_ids)}`);
    check(`${task}: … and its text`, c.message.content === want.text);
    check(`${task}: … finish_reason and usage`,
          c.finish_reason === (want.stop_reason === 'eos' ? 'stop' : 'length') &&
          r.usage.prompt_tokens === want.prompt_tokens && r.usage.completion_tokens === want.token_ids.length &&
          r.usage.total_tokens === want.prompt_tokens + want.token_ids.length);

    const stream = await client.chat.completions.create({ ...params, stream: true,
                                                          stream_options: { include_usage: true } });
    let text = '', ids = [], finish = null, usage = null, role = null, chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) usage = chunk.usage;
      const ch = chunk.choices[0];
      if (!ch) continue;
      role = role || ch.delta.role;
      text += ch.delta.content || '';
      ids.push(...(ch.token_ids || []));
      finish = ch.finish_reason || finish;
    }
    check(`${task}: streaming gives the same tokens`, same(ids, want.token_ids),
          `stream ${JSON.stringify(ids)}\nrun    ${JSON.stringify(want.token_ids)}`);
    check(`${task}: … the same text, role first, finish and usage last (${chunks} chunks)`,
          text === want.text && role === 'assistant' && finish === c.finish_reason && usage &&
          usage.completion_tokens === want.token_ids.length);
  }

  // stop: the client's own parameter; the answer ends where `hyocr run --stop` ends it
  {
    const full = runCli('recognize').text;
    const stop = [...full].slice(full.length >> 2, (full.length >> 2) + 2).join('');
    const want = runCli('recognize', ['--stop', stop]);
    const params = { model: 'hyocr-test', messages: messages(presets[0][1]), max_tokens: MAX_TOKENS, temperature: 0,
                     repetition_penalty: 1.08, return_token_ids: true, stop: [stop] };
    const c = (await client.chat.completions.create(params)).choices[0];
    check(`stop ${JSON.stringify(stop)}: hyocr run --stop's tokens and text, finish_reason stop`,
          same(c.token_ids, want.token_ids) && c.message.content === want.text && c.finish_reason === 'stop' &&
          want.stop_reason === 'requested' && want.text.length < full.length, JSON.stringify([c, want]));
    let text = '';
    for await (const chunk of await client.chat.completions.create({ ...params, stream: true }))
      text += chunk.choices[0]?.delta.content || '';
    check('stop, streamed: the same text, no part of the stop string', text === want.text, JSON.stringify(text));
  }

  // logprobs: the client's own parameters; the values hyocr run --logprobs writes, token by token
  {
    const want = runCli('recognize', ['--logprobs', '2']);
    const params = { model: 'hyocr-test', messages: messages(presets[0][1]), max_tokens: MAX_TOKENS, temperature: 0,
                     repetition_penalty: 1.08, return_token_ids: true, logprobs: true, top_logprobs: 2 };
    const c = (await client.chat.completions.create(params)).choices[0];
    const got = c.logprobs.content.map((e) => [e.logprob, e.top_logprobs.map((t) => t.logprob)]);
    const ref = want.logprobs.map((e) => [e.logprob, e.top_logprobs.map((t) => t.logprob)]);
    check('logprobs: hyocr run --logprobs\'s values, an entry a token, with their bytes',
          same(c.token_ids, want.token_ids) && same(got, ref) &&
          c.logprobs.content.every((e) => Array.isArray(e.bytes) && typeof e.token === 'string'),
          JSON.stringify([got.slice(0, 2), ref.slice(0, 2)]));
    const lps = [];
    for await (const chunk of await client.chat.completions.create({ ...params, stream: true }))
      lps.push(...(chunk.choices[0]?.logprobs?.content || []).map((e) => [e.logprob, e.top_logprobs.map((t) => t.logprob)]));
    check('logprobs, streamed: the same values', same(lps, ref), JSON.stringify(lps.slice(0, 2)));
  }

  // errors come back as the client's typed errors, with the server's message
  try {
    await client.chat.completions.create({ model: 'hyocr-test', messages: [{ role: 'user', content: 'no image' }] });
    check('a request without an image is refused', false);
  } catch (e) {
    check('a request without an image: BadRequestError (400) with the message',
          e instanceof OpenAI.BadRequestError && e.status === 400 && /no image/.test(e.message), e);
  }
  try {
    await new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'wrong', maxRetries: 0 }).models.list();
    check('a wrong key is refused', false);
  } catch (e) {
    check('a wrong key: AuthenticationError (401)', e instanceof OpenAI.AuthenticationError && e.status === 401, e);
  }
  try {
    await client.chat.completions.create({ model: 'gpt-4o', messages: messages('x') });
    check('an unknown model is refused', false);
  } catch (e) {
    check('an unknown model: NotFoundError (404)', e instanceof OpenAI.NotFoundError && e.status === 404, e);
  }
} finally {
  proc.kill('SIGTERM');
}
const code = await new Promise((resolve) => proc.on('exit', (c) => resolve(c)));
check('the server exits 0 on SIGTERM', code === 0, `exit ${code}`);
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
