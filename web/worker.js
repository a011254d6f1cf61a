// The page's Web Worker (web/chargpt.html makes two of it, one that trains and one that takes a
// model apart, from this script and emscripten's glue before it, createChargpt). Every
// computation is the project's C, compiled to WebAssembly (web/web.mk): ./train and ./generate
// run as their own main (web/programs.c), each in a fresh instance of the module with its own
// file system, as a process would; the inspector keeps one instance with the checkpoint open
// (web/inspect.c). This script only moves files and messages.
//
// Messages from the page: {type: 'init', wasm} first (the module's bytes), then
//   {type: 'train', args, files, env}   run ./train with args; files: {path: bytes} written first
//   {type: 'pause'} / {type: 'resume'}  the run waits at its next meeting point, or goes on
//   {type: 'stop'}                      a stop signal (SIGINT, as Ctrl-C): the run saves and ends
//   {type: 'files', id, paths}          read files of the last run (its checkpoint, probe.bin)
//   {type: 'run', id, program, args, files}  run ./generate (or ./train) to its end, its output back
//   {type: 'open', id, name, bytes}     open a checkpoint (named so) in the inspector
//   {type: 'inspect', id, text, knocked, importance}  the inspector's page over a text
// and to it: {type: 'ready'}, {type: 'out', id, stream, text}, {type: 'timeline', html},
// {type: 'paused'}, {type: 'resumed'}, {type: 'exit', id, status, seconds}, {type: 'files', id,
// files}, {type: 'opened', id, answer}, {type: 'view', id, answer, html, ms}, {type: 'failed', id,
// message}.
'use strict';
/* global createChargpt */

var compiled = null;  // the WebAssembly.Module, compiled once; each run instantiates it
var SIGINT = 2;

function post(message, transfer) { self.postMessage(message, transfer || []); }

// A fresh instance of the module: its standard output and error go to the page a line (or at
// most 50 ms of text) at a time, neither a terminal; `hooks` may add pageSignal (the meeting
// points of ./train, common/platform.c) and env (the program's environment).
function instance(id, hooks) {
  var exitStatus = null;
  function stream(name) {
    var decoder = new TextDecoder('utf-8'), bytes = [], last = 0;
    function flush() {
      if (!bytes.length) return;
      var text = decoder.decode(new Uint8Array(bytes), { stream: true });
      bytes = [];
      last = performance.now();
      if (text) post({ type: 'out', id: id, stream: name, text: text });
    }
    return { flush: flush, write: function (code) {
      if (code === null) { flush(); return; }
      bytes.push(code < 0 ? code + 256 : code);
      if (code === 10 || bytes.length >= 4096 || performance.now() - last > 50) flush();
    } };
  }
  var out = stream('stdout'), err = stream('stderr');
  var settings = {
    noInitialRun: true,
    stdin: function () { return null; },
    stdout: out.write,
    stderr: err.write,
    quit: function (status, toThrow) { exitStatus = status; throw toThrow; },
    instantiateWasm: function (imports, receive) {
      WebAssembly.instantiate(compiled, imports).then(function (made) { receive(made, compiled); });
      return {};
    },
    pageSignal: hooks && hooks.pageSignal,
    preRun: [function (m) { if (hooks && hooks.env) Object.assign(m.ENV, hooks.env); }]
  };
  return createChargpt(settings).then(function (m) {
    m.flushStreams = function () { m._fflush(0); out.flush(); err.flush(); };
    m.exitStatus = function () { return exitStatus; };
    return m;
  });
}

function writeFiles(m, files) {
  Object.keys(files || {}).forEach(function (path) {
    var dir = path.slice(0, path.lastIndexOf('/'));
    if (dir) m.FS.mkdirTree(dir);
    m.FS.writeFile(path, new Uint8Array(files[path]));
  });
}

function readFile(m, path) {
  try { return m.FS.readFile(path); } catch (e) { return null; }
}

// Runs program's main with args in m (asynchronously: ./train's meeting points may suspend it),
// to the status it returns or exits with.
function runMain(m, program, args) {
  var argv = [program].concat(args), pointers = argv.map(function (a) { return m.allocateUTF8(a); });
  var block = m._malloc(4 * (argv.length + 1));
  pointers.concat([0]).forEach(function (p, i) { m.HEAP32[(block >> 2) + i] = p; });
  function done(status) { m.flushStreams(); return status; }
  return Promise.resolve()
    .then(function () { return m.ccall('main', 'number', ['number', 'number'], [argv.length, block], { async: true }); })
    .then(done, function (e) {
      if (m.exitStatus() !== null) return done(m.exitStatus());  // exit(): die() or a signal's end
      m.flushStreams();
      throw e;
    });
}

// ---- training: one run at a time, its instance kept for its files

var training = { m: null, paused: false, stop: false, resume: null, timeline: null, lastYield: 0 };

// The run's timeline page, posted whenever ./train has rewritten it (after a probe).
function postTimeline(m) {
  var stat;
  try { stat = m.FS.stat('/out/timeline.html'); } catch (e) { return; }
  var key = stat.ino + ':' + stat.mtime.getTime() + ':' + stat.size;
  if (key === training.timeline) return;
  training.timeline = key;
  var bytes = readFile(m, '/out/timeline.html');
  if (bytes) post({ type: 'timeline', html: new TextDecoder('utf-8').decode(bytes) });
}

// ./train's meeting points (platform_signals_poll): every 100 ms, or at once when the page has
// asked for something, the worker's messages are let in; a stop answers SIGINT, a pause waits
// for the resume. Between those the run goes on without leaving the module.
var channel = new MessageChannel(), afterEvents = [];
channel.port1.onmessage = function () { afterEvents.shift()(); };
function letEventsIn(then) { afterEvents.push(then); channel.port2.postMessage(0); }

function pageSignal(wakeUp) {
  postTimeline(training.m);
  var now = performance.now();
  if (!training.paused && !training.stop && now - training.lastYield < 100) { wakeUp(0); return; }
  letEventsIn(function answer() {
    training.lastYield = performance.now();
    if (training.stop) {
      training.stop = false;
      training.paused = false;
      wakeUp(SIGINT);
    } else if (training.paused) {
      training.resume = answer;
      post({ type: 'paused' });
    } else {
      wakeUp(0);
    }
  });
}

function train(message) {
  var started = performance.now();
  training.paused = training.stop = false;
  training.timeline = null;
  instance(message.id, { pageSignal: pageSignal, env: message.env }).then(function (m) {
    training.m = m;
    writeFiles(m, message.files);
    return runMain(m, 'train', message.args).then(function (status) {
      postTimeline(m);
      post({ type: 'exit', id: message.id, status: status, seconds: (performance.now() - started) / 1000 });
    });
  }).catch(function (e) { post({ type: 'failed', id: message.id, message: String(e && e.message || e) }); });
}

// ---- ./generate, each call a run of its own

function run(message) {
  var started = performance.now();
  instance(message.id, { env: message.env }).then(function (m) {
    writeFiles(m, message.files);
    return runMain(m, message.program, message.args).then(function (status) {
      post({ type: 'exit', id: message.id, status: status, seconds: (performance.now() - started) / 1000 });
    });
  }).catch(function (e) { post({ type: 'failed', id: message.id, message: String(e && e.message || e) }); });
}

// ---- the inspector: one instance, the checkpoint open in it

var inspector = null;  // a promise of the instance

function inspectorInstance() {
  if (!inspector) inspector = instance('inspector', null);
  return inspector;
}

// A failure the C did not answer (an abort): the next call starts a fresh instance.
function inspectorFailed(id, e) {
  inspector = null;
  post({ type: 'failed', id: id, message: String(e && e.message || e) });
}

// The checkpoint is written under its own name (no directory: the page keeps a name to its last
// part), so that ./generate's messages name it as the person knows it.
function open(message) {
  inspectorInstance().then(function (m) {
    var path = '/' + message.name;
    m.FS.writeFile(path, new Uint8Array(message.bytes));
    var answer = JSON.parse(m.ccall('inspect_open', 'string', ['string'], [path]));
    try { m.FS.unlink(path); } catch (e) { /* already gone */ }
    answer.limit = JSON.parse(m.ccall('inspect_limit', 'string', [], []));
    post({ type: 'opened', id: message.id, answer: answer });
  }).catch(function (e) { inspectorFailed(message.id, e); });
}

function inspect(message) {
  inspectorInstance().then(function (m) {
    var started = performance.now();
    m.FS.writeFile('/tmp/text.txt', new TextEncoder().encode(message.text));
    var answer = JSON.parse(m.ccall('inspect_update', 'string', ['string', 'array', 'number', 'string'],
                                    ['/tmp/text.txt', message.knocked, message.importance ? 1 : 0, '/tmp/view.html']));
    var html = answer.error ? null : new TextDecoder('utf-8').decode(m.FS.readFile('/tmp/view.html'));
    post({ type: 'view', id: message.id, answer: answer, html: html, ms: performance.now() - started });
  }).catch(function (e) { inspectorFailed(message.id, e); });
}

function limit(message) {
  inspectorInstance().then(function (m) {
    post({ type: 'limit', id: message.id, answer: JSON.parse(m.ccall('inspect_limit', 'string', [], [])) });
  });
}

self.onmessage = function (event) {
  var message = event.data;
  switch (message.type) {
    case 'init':
      WebAssembly.compile(message.wasm).then(function (module) {
        compiled = module;
        post({ type: 'ready' });
      }, function (e) { post({ type: 'failed', id: 'init', message: String(e && e.message || e) }); });
      break;
    case 'train': train(message); break;
    case 'pause': training.paused = true; break;
    case 'resume':
      training.paused = false;
      if (training.resume) {
        var answer = training.resume;
        training.resume = null;
        post({ type: 'resumed' });
        answer();
      }
      break;
    case 'stop':
      training.stop = true;
      if (training.resume) {
        var stopNow = training.resume;
        training.resume = null;
        stopNow();
      }
      break;
    case 'files':
      var files = {};
      message.paths.forEach(function (path) { files[path] = training.m ? readFile(training.m, path) : null; });
      post({ type: 'files', id: message.id, files: files });
      break;
    case 'run': run(message); break;
    case 'open': open(message); break;
    case 'inspect': inspect(message); break;
    case 'limit': limit(message); break;
  }
};
