// Opens a page in headless Chromium and waits for it to finish its work: what --dump-dom
// cannot do for a page whose work runs in Web Workers for a while (scripts/check_web.sh).
//
// usage: node scripts/headless_page.js URL [SECONDS] [SCREENSHOT.png]
//
// Chromium runs with the flags of scripts/headless_browser.sh and --allow-file-access-from-files
// (a page opened from a file reads the files beside it), driven through its DevTools protocol
// on a pipe (--remote-debugging-pipe: no port, nothing to install). Once <body> carries
// data-rendered (at most SECONDS, default 600), prints <body>'s data-* attributes as one JSON
// object and, with SCREENSHOT, saves the window; the page's console errors and uncaught
// exceptions go to stderr. Exit status 0; 1 when the time ran out, the page reported a script
// error (data-failed) or an exception went uncaught; 2 for bad usage or no browser. On Linux the
// JSON also holds browser_cpu_seconds: the CPU time of the browser's processes (its page's and
// workers' threads with the rest) from its start to the page's end, from /proc.
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [url, seconds = '600', screenshot] = process.argv.slice(2);
if (!url) {
  console.error('usage: node scripts/headless_page.js URL [SECONDS] [SCREENSHOT.png]');
  process.exit(2);
}
const browser = ['chromium', 'chromium-browser', 'google-chrome'].map((name) => {
  try { return execFileSync('sh', ['-c', 'command -v ' + name]).toString().trim(); } catch (e) { return ''; }
}).find((found) => found);
if (!browser) {
  console.error('headless_page: no chromium found');
  process.exit(2);
}
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'chargpt-page-'));
const child = spawn(browser, [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--allow-file-access-from-files', '--window-size=1400,1000', '--user-data-dir=' + profile,
  '--remote-debugging-pipe', 'about:blank'], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
const toBrowser = child.stdio[3], fromBrowser = child.stdio[4];

let nextId = 1, received = '', failed = false;
const waiting = {};
function send(method, params, sessionId) {
  const id = nextId++;
  toBrowser.write(JSON.stringify({ id, method, params: params || {}, sessionId }) + '\0');
  return new Promise((resolve, reject) => { waiting[id] = { resolve, reject }; });
}
fromBrowser.on('data', (chunk) => {
  received += chunk.toString();
  let end;
  while ((end = received.indexOf('\0')) >= 0) {
    const message = JSON.parse(received.slice(0, end));
    received = received.slice(end + 1);
    if (message.id && waiting[message.id]) {
      const w = waiting[message.id];
      delete waiting[message.id];
      if (message.error) w.reject(new Error(message.error.message));
      else w.resolve(message.result);
    } else if (message.method === 'Runtime.exceptionThrown') {
      const d = message.params.exceptionDetails;
      console.error('uncaught: ' + (d.exception && d.exception.description || d.text));
      failed = true;
    } else if (message.method === 'Runtime.consoleAPICalled' && message.params.type === 'error') {
      console.error('console: ' + message.params.args.map((a) => a.value || a.description).join(' '));
    }
  }
});

// The CPU seconds of the browser's processes so far (Linux: /proc/PID/stat's utime and stime of
// every descendant), or null where there is no /proc.
function browserCpuSeconds() {
  try {
    const stats = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map((pid) => {
      try {
        const f = fs.readFileSync('/proc/' + pid + '/stat', 'utf8'), rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
        return { pid: +pid, ppid: +rest[1], ticks: +rest[11] + +rest[12] };
      } catch (e) { return null; }
    }).filter((x) => x);
    const ours = new Set([child.pid]);
    for (let grew = true; grew;) {
      grew = false;
      stats.forEach((p) => { if (!ours.has(p.pid) && ours.has(p.ppid)) { ours.add(p.pid); grew = true; } });
    }
    const hz = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    return stats.filter((p) => ours.has(p.pid)).reduce((t, p) => t + p.ticks, 0) / hz;
  } catch (e) { return null; }
}

function end(status) {
  child.on('exit', () => {
    // the browser's helper processes may still be writing its profile: retried, then left
    try { fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }); } catch (e) { /* left */ }
    process.exit(status);
  });
  child.kill();
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

(async () => {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  await send('Runtime.enable', {}, sessionId);
  await send('Page.enable', {}, sessionId);
  await send('Page.navigate', { url }, sessionId);
  const deadline = Date.now() + 1000 * Number(seconds);
  for (;;) {
    const { result } = await send('Runtime.evaluate', {
      expression: 'document.body && document.body.dataset.rendered !== undefined ? JSON.stringify(Object.assign({}, document.body.dataset)) : ""',
      returnByValue: true }, sessionId);
    if (result.value) {
      const data = JSON.parse(result.value);
      data.browser_cpu_seconds = browserCpuSeconds();
      console.log(JSON.stringify(data));
      if (screenshot) {
        const { data } = await send('Page.captureScreenshot', { format: 'png' }, sessionId);
        fs.writeFileSync(screenshot, Buffer.from(data, 'base64'));
      }
      end(failed || data.failed !== undefined ? 1 : 0);
    }
    if (Date.now() > deadline) {
      console.error('headless_page: ' + url + ': no data-rendered on <body> after ' + seconds + ' s');
      end(1);
    }
    await sleep(250);
  }
})().catch((e) => { console.error('headless_page: ' + e.message); end(1); });
