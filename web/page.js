// The page's script (web/page.html, web/chargpt.html): its controls, two Web Workers
// (web/worker.js: one trains, one takes a model apart) and the pages ./train and ./generate
// write, shown in frames. Every number the page shows comes from the C in the workers; no text
// of a corpus, prompt or checkpoint is ever parsed as HTML here (textContent only), and the
// pages in the frames are the C's own, which escape it, in sandboxed frames.
//
// Hooks in the address (tests, scripts/check_web.sh):
//   #task=NAME&seed=S&steps=N&selftest  trains (with --log-every 1 unless it gives one; any other key=value is
//       given to ./train after it as --key value, a key alone as --key, kernels=K sets
//       CHARGPT_KERNELS), then sets on <body>
//       data-rendered="trained" and data-result: {"train_loss": [each step's], "val_loss",
//       "seconds", "status", "steps", "tensors_sha256" (of the checkpoint's data section)}, or
//       {"status", "error"} when ./train failed
//   #ckpt=RELATIVE_PATH&prompt=TEXT&selftest  opens the checkpoint, then data-rendered
//       "inspected" and data-result: {"bits_per_char" (./generate --score's), "greedy" (the
//       50 characters ./generate -t 0 appends), "update_ms" (the inspector's update, from the
//       text to its views drawn, the median of 5 after the first, or of updates=N - 1; the
//       first loads the inspector's page, the others draw in it), "update_worker_ms" and
//       "update_draw_ms" (of it, the C's part in the worker and the drawing's in the frame),
//       "update_times", "update_worker_times", "update_draw_times" (each update's, the first
//       too), "inspector_views" (after them, one more update drawn in place with every view,
//       which the frame reads back: its <body>'s data-*, viewer/attention_html.c), "model"};
//       or data-rendered "refused" and {"error": the page's message}
'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var hash = {};
  location.hash.replace(/^#/, '').split('&').forEach(function (part) {
    if (!part) return;
    var eq = part.indexOf('=');
    var key = decodeURIComponent(eq < 0 ? part : part.slice(0, eq)), value = eq < 0 ? '' : part.slice(eq + 1);
    hash[key] = decodeURIComponent(value.replace(/\+/g, ' '));
  });
  var selftest = 'selftest' in hash;

  // ---- the one message: what went wrong, said once ----
  function showMessage(text) {
    var box = $('message');
    box.textContent = text;
    box.className = text ? 'shown' : '';
  }
  window.addEventListener('error', function (e) { showMessage('script error: ' + e.message); });

  function finish(rendered, result) {
    if (!selftest) return;
    document.body.dataset.result = JSON.stringify(result);
    document.body.dataset.rendered = rendered;
  }

  // ---- tabs ----
  var tabs = ['train', 'inspect', 'lessons'];
  function showTab(name) {
    tabs.forEach(function (t) {
      $(t).className = 'tab' + (t === name ? ' chosen' : '');
      $('tab-' + t).className = t === name ? 'chosen' : '';
    });
  }
  tabs.forEach(function (t) { $('tab-' + t).addEventListener('click', function () { showTab(t); }); });

  // ---- the workers ----
  function bytesOf(id) {
    var s = atob($(id).textContent.trim()), bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    return bytes;
  }
  var wasm = bytesOf('chargpt-wasm');
  var corpus = null;  // data/tinyshakespeare.txt.gz, decoded when a run first needs it
  var workerUrl = URL.createObjectURL(new Blob([$('chargpt-worker').textContent], { type: 'text/javascript' }));
  var nextId = 1;

  // A worker of web/worker.js: send(message, handlers) gives the message an id, and handlers
  // (out, exit, view, ...) get the worker's answers to it.
  function makeWorker(onOther) {
    var w = new Worker(workerUrl), pending = {}, queue = [], ready = false;
    w.onmessage = function (event) {
      var m = event.data;
      if (m.type === 'ready') {
        ready = true;
        queue.forEach(function (q) { w.postMessage(q); });
        queue = [];
        return;
      }
      var handlers = m.id !== undefined && pending[m.id];
      if (handlers && handlers[m.type]) handlers[m.type](m);
      else if (m.type === 'failed') showMessage('the page failed: ' + m.message);
      else if (onOther) onOther(m);
      if (handlers && (m.type === 'exit' || m.type === 'failed' || handlers.once)) delete pending[m.id];
    };
    w.onerror = function (e) { showMessage('the page\u2019s worker failed: ' + e.message); };
    w.postMessage({ type: 'init', wasm: wasm.slice().buffer });
    return {
      send: function (message, handlers) {
        message.id = nextId++;
        if (handlers) pending[message.id] = handlers;
        if (ready) w.postMessage(message);
        else queue.push(message);
        return message.id;
      },
      post: function (message) { if (ready) w.postMessage(message); else queue.push(message); }
    };
  }

  // ---- frames: a page the C wrote, in a sandboxed frame, redrawn without a blank ----
  // The view its script keeps in the address (history.replaceState, #layer=...) is kept
  // here across redraws: a few lines of this page's own run first in the frame.
  var views = {};
  window.addEventListener('message', function (e) {
    var d = e.data;
    if (d && typeof d.chargptView === 'string' && /^#[A-Za-z0-9=&_.,-]*$/.test(d.chargptView) && d.frame in views)
      views[d.frame] = d.chargptView;
  });
  function prelude(name) {
    var view = (views[name] || '').replace(/&?selftest/g, '');
    return '<script>(function () { var replace = history.replaceState;' +
      'history.replaceState = function (s, t, u) { if (typeof u === "string" && u.charAt(0) === "#") u = "about:srcdoc" + u;' +
      ' replace.call(history, s, t, u); parent.postMessage({ frame: ' + JSON.stringify(name) + ', chargptView: location.hash }, "*"); };' +
      (view ? 'replace.call(history, null, "", "about:srcdoc" + ' + JSON.stringify(view) + ');' : '') +
      '})();<\/script>';
  }
  function framed(name, holder) {
    views[name] = views[name] || '';
    var frames = [0, 1].map(function () {
      var f = document.createElement('iframe');
      f.className = 'frame hidden-frame';
      f.setAttribute('sandbox', 'allow-scripts');
      holder.appendChild(f);
      return f;
    });
    var shown = -1;
    return function show(html, done) {
      var next = frames[shown === 0 ? 1 : 0], at = html.indexOf('<head>');
      next.onload = function () {
        next.className = 'frame';
        if (shown >= 0) frames[shown].className = 'frame hidden-frame';
        shown = frames.indexOf(next);
        if (done) done(next);
      };
      next.srcdoc = at < 0 ? html : html.slice(0, at + 6) + prelude(name) + html.slice(at + 6);
    };
  }
  var showTimeline = framed('timeline', $('timeline-frames'));

  // The inspector's frame: its first page loaded as a frame's page, each later one drawn in place
  // by the script of the page there (viewer/attention_html.c: {chargptPage, id} to it, {chargptShown:
  // id} back, with failed when it could not draw it, and the page is then loaded), which takes a
  // tenth of the time of loading the page anew. check: every view drawn in place and read back,
  // done's second argument (the frame's <body> data-*, as its #selftest sets them).
  function inspectorFrame(holder) {
    var load = framed('inspector', holder), frame = null, waiting = null, nextShow = 1;
    window.addEventListener('message', function (e) {
      if (!waiting || !e.data || e.data.chargptShown !== waiting.id || e.source !== waiting.window) return;
      var w = waiting;
      waiting = null;
      if (e.data.failed) show(w.html, w.done, true);
      else w.done(e.data.ms, e.data.views);
    });
    function show(html, done, reload, check) {
      if (!frame || reload) {
        load(html, function (f) { frame = f; if (done) done(null); });
        return;
      }
      waiting = { id: nextShow++, window: frame.contentWindow, html: html, done: done || function () {} };
      frame.contentWindow.postMessage({ chargptPage: html, id: waiting.id, check: !!check }, '*');
    }
    return show;
  }
  var showInspector = inspectorFrame($('inspector-frames'));

  function download(bytes, name) {
    var a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
  }
  // a file's name as the page's file system takes it, in its root: the name's last part, no
  // control characters, none of the root's own directories (the texts go in /tmp)
  function fileName(name, fallback) {
    var n = name.replace(/^.*[\/\\]/, '').replace(/[\x00-\x1f]/g, '_');
    return /^(|\.|\.\.|tmp|dev|proc|home|out|data)$/.test(n) ? fallback : n;
  }
  function quoted(arg) { return /^[A-Za-z0-9_.,:=\/+-]+$/.test(arg) ? arg : "'" + arg.replace(/'/g, "'\\''") + "'"; }

  // ================================================================ Train
  var trainer = makeWorker(function (m) {
    if (m.type === 'timeline') showTimeline(m.html);
    else if (m.type === 'paused') status('paused: ./train waits at its next step; Resume goes on');
    else if (m.type === 'resumed') status('training');
  });
  var text = null;    // {name, bytes}: a dropped or chosen text
  var run = null;     // the run under way or the last: {id, running, paused}
  var LOG_CHUNKS = 3000;

  function status(s) { $('status-line').textContent = s; }
  // the output as text nodes, the oldest dropped past LOG_CHUNKS of them
  function appendLog(s) {
    var log = $('train-log'), bottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.appendChild(document.createTextNode(s));
    while (log.childNodes.length > LOG_CHUNKS) log.removeChild(log.firstChild);
    if (bottom) log.scrollTop = log.scrollHeight;
  }
  function source() { return document.querySelector('input[name=source]:checked').value; }

  var numberOptions = ['n-layer', 'n-head', 'n-embd', 'block-size', 'steps', 'batch-size', 'lr', 'min-lr', 'warmup',
                       'eval-every', 'seed'];
  // ./train's arguments from the form: only what is filled in, so that the task's recipe (or
  // ./train's defaults) gives the rest, as on the command line
  function trainArgs() {
    var args = source() === 'task' ? ['--task', $('task').value] :
               source() === 'text' ? ['--data', '/data/' + (text ? text.name : '')] : [];
    numberOptions.forEach(function (o) { if ($(o).value !== '') args.push('--' + o, $(o).value); });
    if ($('pos').value !== 'learned') args.push('--pos', $('pos').value);
    $('more').value.split(/\s+/).forEach(function (a) { if (a) args.push(a); });
    return args;
  }
  function showCommand() {
    $('train-command').textContent = './train ' + trainArgs().map(function (a) {
      return a.indexOf('/data/') === 0 ? quoted(a.slice(6)) : quoted(a);
    }).join(' ');
  }
  ['task', 'pos', 'more'].concat(numberOptions).forEach(function (id) { $(id).addEventListener('input', showCommand); });
  document.querySelectorAll('input[name=source]').forEach(function (r) { r.addEventListener('change', showCommand); });

  function useText(file) {
    file.arrayBuffer().then(function (bytes) {
      // the name as the run's messages give it, in the worker's own directory
      text = { name: fileName(file.name, 'text.txt'), bytes: bytes };
      document.querySelector('input[name=source][value=text]').checked = true;
      $('text-note').textContent = 'your text: ' + text.name + ', ' + bytes.byteLength + ' bytes (./train reads it: ' +
        'plain or gzip, UTF-8 unless --encoding says otherwise)';
      showCommand();
    });
  }
  $('text-file').addEventListener('change', function () { if (this.files[0]) useText(this.files[0]); });

  function setRunning(running, paused) {
    $('start').disabled = running;
    $('pause').disabled = !running;
    $('pause').textContent = paused ? 'Resume' : 'Pause';
    $('stop').disabled = !running;
    ['get-ckpt', 'get-probe', 'take-apart'].forEach(function (id) { $(id).disabled = !run; });
  }

  function startTraining(extra, env, onExit) {
    if (source() === 'text' && !text) {
      showMessage('choose a text file to train on, or drop one on the page');
      return;
    }
    showMessage('');
    var args = trainArgs().concat(['--out', '/out'], extra || []), files = {};
    if (source() === 'text') files['/data/' + text.name] = text.bytes.slice(0);
    // ./train finds the corpus it ships with in data/ of its working directory (data/corpus.c)
    if (source() === 'shakespeare') files['/data/tinyshakespeare.txt.gz'] = (corpus = corpus || bytesOf('chargpt-corpus')).slice().buffer;
    $('train-log').textContent = '';
    status('training');
    run = { running: true, paused: false };
    setRunning(true, false);
    var stderr = '';
    run.id = trainer.send({ type: 'train', args: args, files: files, env: env || {} }, {
      out: function (m) {
        appendLog(m.text);
        if (m.stream === 'stderr') stderr = (stderr + m.text).slice(-4096);
      },
      failed: function (m) {
        run.running = false;
        setRunning(false, false);
        showMessage('the page failed to run ./train: ' + m.message);
        if (onExit) onExit({ status: -1, seconds: 0 });
      },
      exit: function (m) {
        run.running = false;
        setRunning(false, false);
        status(m.status === 0 ? 'done in ' + m.seconds.toFixed(1) + ' s' :
               './train ended with status ' + m.status + (m.status === 130 ? ' (stopped, the checkpoint saved)' : ''));
        if (m.status !== 0 && m.status !== 130)  // its message: the last line ./train wrote on stderr
          showMessage(stderr.trim().split('\n').pop() || './train failed with status ' + m.status);
        if (onExit) onExit(m);
      }
    });
  }
  $('start').addEventListener('click', function () { startTraining(); });
  $('pause').addEventListener('click', function () {
    if (!run || !run.running) return;
    run.paused = !run.paused;
    trainer.post({ type: run.paused ? 'pause' : 'resume' });
    setRunning(true, run.paused);
    status(run.paused ? 'pausing at the next step' : 'training');
  });
  $('stop').addEventListener('click', function () {
    trainer.post({ type: 'stop' });
    status('stopping: the step under way ends and the checkpoint is saved');
  });
  // a file of the last run to then(bytes); missing, a message (and then(null) when asked)
  function runFile(path, then, orNull) {
    trainer.send({ type: 'files', paths: [path] }, {
      once: true,
      files: function (m) {
        if (m.files[path]) { then(m.files[path]); return; }
        showMessage(path.slice(5) + ' is not there yet: ./train writes it at its first save (every ' +
                    '--save-every steps, at the end, or at Stop)');
        if (orNull) then(null);
      }
    });
  }
  $('get-ckpt').addEventListener('click', function () { runFile('/out/ckpt.safetensors', function (b) { download(b, 'ckpt.safetensors'); }); });
  $('get-probe').addEventListener('click', function () { runFile('/out/probe.bin', function (b) { download(b, 'probe.bin'); }); });
  $('take-apart').addEventListener('click', function () {
    runFile('/out/ckpt.safetensors', function (b) { openCheckpoint(b.buffer, 'ckpt.safetensors'); showTab('inspect'); });
  });

  // ================================================================ Take a model apart
  var inspector = makeWorker();
  var model = null;       // {bytes, name, config}
  var knocked = null;     // Uint8Array (L*H)
  var inFlight = false, dirty = false, updateTimes = [], onViewed = null;
  var checkViews = false;  // the next update's views all drawn and read back (the #ckpt hook)

  inspector.send({ type: 'limit' }, {
    once: true,
    limit: function (m) {
      $('limit-note').textContent = 'The largest model this page takes: one whose inspection fits in ' + m.answer.text +
        ' (WebAssembly\u2019s memory, as ./generate reckons it); a larger checkpoint is refused before anything is allocated.';
    }
  });

  function ablateList() {
    var list = [];
    if (!model) return list;
    for (var i = 0; i < knocked.length; i++) if (knocked[i]) list.push(Math.floor(i / model.config.n_head) + '.' + (i % model.config.n_head));
    return list;
  }
  function showInspectCommand() {
    var ablate = ablateList(), name = model ? quoted(model.name) : 'CKPT';
    $('inspect-command').textContent = './generate ' + name + ' -n 0 --attention view.html' +
      (ablate.length ? ' --ablate ' + ablate.join(',') : '') + ' -- ' + quoted($('prompt').value) +
      '\n./generate ' + name + (ablate.length ? ' --ablate ' + ablate.join(',') : '') + ' --score text.txt';
    var g = ['-n', $('gen-n').value, '-t', $('gen-t').value, '-k', $('gen-k').value, '-p', $('gen-p').value, '-s', $('gen-s').value];
    $('generate-command').textContent = './generate ' + name + ' ' + g.join(' ') +
      (ablate.length ? ' --ablate ' + ablate.join(',') : '') + ' -- ' + quoted($('prompt').value);
  }

  function buildHeads() {
    var grid = $('heads'), c = model.config;
    grid.textContent = '';
    grid.style.gridTemplateColumns = 'auto repeat(' + c.n_head + ', auto)';
    for (var l = 0; l < c.n_layer; l++) {
      var name = document.createElement('span');
      name.textContent = 'layer ' + l;
      grid.appendChild(name);
      for (var h = 0; h < c.n_head; h++) {
        var b = document.createElement('button');
        b.textContent = l + '.' + h;
        b.title = 'layer ' + l + ', head ' + h + ': click to knock it out';
        b.dataset.index = l * c.n_head + h;
        b.addEventListener('click', function () {
          var i = +this.dataset.index;
          knocked[i] = knocked[i] ? 0 : 1;
          this.className = knocked[i] ? 'out' : '';
          update();
        });
        grid.appendChild(b);
      }
    }
  }

  function openCheckpoint(bytes, name, then) {
    showMessage('');
    $('model-line').textContent = 'opening ' + name + '\u2026';
    inspector.send({ type: 'open', name: name, bytes: bytes.slice(0) }, {
      once: true,
      failed: function (m) {
        showMessage(name + ': the page failed to open it: ' + m.message);
        if (then) then(m.message);
      },
      opened: function (m) {
        var a = m.answer;
        if (a.error) {
          model = null;
          $('model-line').textContent = '';
          $('heads').textContent = '';
          showMessage(a.error);
          if (then) then(a.error);
          return;
        }
        model = { bytes: bytes, name: name, config: a };
        knocked = new Uint8Array(a.n_layer * a.n_head);
        $('model-line').textContent = name + ': ' + a.n_layer + ' layers of ' + a.n_head + ' heads of ' + a.head_size +
          ', n_embd ' + a.n_embd + ', block ' + a.block_size + ', vocabulary ' + a.vocab_size + ', ' + a.position +
          ' positions, ' + a.parameters + ' parameters' + (a.step > 0 ? ', trained ' + a.step + ' steps' : '');
        buildHeads();
        showInspectCommand();
        update();
        if (then) then(null);
      }
    });
  }
  $('ckpt-file').addEventListener('change', function () {
    var f = this.files[0];
    if (f) f.arrayBuffer().then(function (b) { openCheckpoint(b, fileName(f.name, 'ckpt.safetensors')); });
  });

  // The inspector follows the text: one update at a time, the latest text next.
  function update() {
    showInspectCommand();
    if (!model) return;
    if (inFlight) { dirty = true; return; }
    inFlight = true;
    dirty = false;
    var started = performance.now(), check = checkViews;
    checkViews = false;
    inspector.send({ type: 'inspect', text: $('prompt').value, knocked: knocked, importance: $('importance').checked }, {
      once: true,
      failed: function (m) {
        inFlight = false;
        showMessage('the inspector failed: ' + m.message);
        if (onViewed) onViewed({ error: m.message }, performance.now() - started, 0);
      },
      view: function (m) {
        var a = m.answer;
        function next(drawMs, views) {
          inFlight = false;
          if (onViewed) onViewed(a, performance.now() - started, m.ms, drawMs, views);
          if (dirty) update();
        }
        if (a.error) {
          $('score-line').textContent = '';
          showMessage(a.error);
          next(null);
          return;
        }
        showMessage('');
        var ablate = ablateList();
        $('score-line').textContent = a.bits_per_char === null ? 'type two characters or more for the loss' :
          'loss ' + a.bits_per_char.toFixed(4) + ' bits per character over ' + a.scored + ' characters' +
          (ablate.length ? ', heads knocked out: ' + ablate.join(', ') : '') +
          (a.chars > a.window ? ' (the inspector shows the last ' + a.window + ')' : '');
        showInspector(m.html, next, false, check);
      }
    });
  }
  $('prompt').addEventListener('input', update);
  $('importance').addEventListener('change', update);
  ['gen-n', 'gen-t', 'gen-k', 'gen-p', 'gen-s'].forEach(function (id) { $(id).addEventListener('input', showInspectCommand); });

  // ./generate itself, in a run of its own: the checkpoint written into it, and the text as
  // /tmp/prompt.txt (what --score reads)
  function generate(args, onOut, onExit) {
    var err = '';
    var files = { '/tmp/prompt.txt': new TextEncoder().encode($('prompt').value).buffer };
    files['/' + model.name] = model.bytes.slice(0);
    inspector.send({ type: 'run', program: 'generate', args: ['/' + model.name].concat(args), files: files }, {
      out: function (m) { if (m.stream === 'stdout') onOut(m.text); else err += m.text; },
      exit: function (m) { onExit(m.status, err); },
      failed: function (m) { onExit(-1, err + m.message); }
    });
  }
  $('generate').addEventListener('click', function () {
    if (!model) { showMessage('open a checkpoint first'); return; }
    var ablate = ablateList(), args = ['-n', $('gen-n').value, '-t', $('gen-t').value, '-k', $('gen-k').value,
                                       '-p', $('gen-p').value, '-s', $('gen-s').value];
    if (ablate.length) args.push('--ablate', ablate.join(','));
    $('generated').textContent = '';
    $('generate').disabled = true;
    generate(args.concat(['--', $('prompt').value]), function (s) { $('generated').textContent += s; },
      function (status, err) {
        $('generate').disabled = false;
        if (status !== 0) showMessage(err.trim().split('\n').pop() || './generate failed with status ' + status);
      });
  });

  // ---- dropping a file anywhere: a checkpoint to take apart, else a text to train on ----
  var dragDepth = 0;
  document.addEventListener('dragenter', function (e) { e.preventDefault(); dragDepth++; $('drop-note').className = 'shown'; });
  document.addEventListener('dragleave', function () { if (--dragDepth <= 0) { dragDepth = 0; $('drop-note').className = ''; } });
  document.addEventListener('dragover', function (e) { e.preventDefault(); });
  document.addEventListener('drop', function (e) {
    e.preventDefault();
    dragDepth = 0;
    $('drop-note').className = '';
    var f = e.dataTransfer.files[0];
    if (!f) return;
    if (/\.safetensors$/i.test(f.name)) {
      f.arrayBuffer().then(function (b) { openCheckpoint(b, fileName(f.name, 'ckpt.safetensors')); });
      showTab('inspect');
    } else {
      useText(f);
      showTab('train');
    }
  });

  // ================================================================ the address's hooks
  showCommand();
  showInspectCommand();
  if (hash.task) {
    document.querySelector('input[name=source][value=task]').checked = true;
    $('task').value = hash.task;
    // the address's own options after it (./train takes each once: a log-every of its own replaces the 1)
    var extra = selftest && !('log-every' in hash) ? ['--log-every', '1'] : [], env = {};
    Object.keys(hash).forEach(function (key) {
      if (key === 'task' || key === 'selftest') return;
      if (key === 'kernels') { env.CHARGPT_KERNELS = hash[key]; return; }
      if ($(key) && numberOptions.indexOf(key) >= 0) $(key).value = hash[key];
      else extra.push.apply(extra, hash[key] === '' ? ['--' + key] : ['--' + key, hash[key]]);  // no value: a flag
    });
    showCommand();
    startTraining(extra, env, function (m) {
      if (!selftest) return;
      if (m.status !== 0) {
        finish('trained', { status: m.status, error: $('message').textContent, seconds: m.seconds });
        return;
      }
      runFile('/out/log.csv', function (bytes) {
        if (!bytes) { finish('trained', { status: m.status, error: $('message').textContent }); return; }
        var rows = new TextDecoder().decode(bytes).trim().split('\n'), head = rows.shift().split(',');
        var col = function (name) { return head.indexOf(name); }, losses = [], val = null;
        rows.forEach(function (row) {
          var f = row.split(',');
          losses.push(+f[col('train_loss')]);
          if (f[col('val_loss')] !== '') val = +f[col('val_loss')];
        });
        var result = { train_loss: losses, val_loss: val, seconds: m.seconds, status: m.status, steps: losses.length };
        // the SHA-256 of the checkpoint's tensors (its data section, after the header), to compare
        // with ./train's bit for bit
        runFile('/out/ckpt.safetensors', function (ckpt) {
          if (!ckpt) { finish('trained', result); return; }
          var header = new DataView(ckpt.buffer, ckpt.byteOffset).getUint32(0, true);
          crypto.subtle.digest('SHA-256', ckpt.subarray(8 + header)).then(function (digest) {
            result.tensors_sha256 = Array.from(new Uint8Array(digest)).map(function (b) {
              return (b < 16 ? '0' : '') + b.toString(16);
            }).join('');
            finish('trained', result);
          });
        }, true);
      }, true);
    });
  } else if (hash.ckpt) {
    showTab('inspect');
    if ('prompt' in hash) $('prompt').value = hash.prompt;
    var xhr = new XMLHttpRequest();
    xhr.open('GET', hash.ckpt);
    xhr.responseType = 'arraybuffer';
    xhr.onload = function () {
      if (!xhr.response || (xhr.status !== 0 && xhr.status !== 200)) {
        showMessage(hash.ckpt + ': cannot be read (status ' + xhr.status + ')');
        finish('refused', { error: $('message').textContent });
        return;
      }
      openCheckpoint(xhr.response, fileName(hash.ckpt, 'ckpt.safetensors'), function (error) {
        if (error) { finish('refused', { error: error }); return; }
        if (selftest) measure();
      });
    };
    xhr.onerror = function () {
      showMessage(hash.ckpt + ': cannot be read (a page opened from a file reads files beside it only in a ' +
                  'browser started with --allow-file-access-from-files)');
      finish('refused', { error: $('message').textContent });
    };
    xhr.send();
  }

  // The checkpoint's hook: the inspector's update timed five times (after the first), then
  // ./generate --score and ./generate -t 0 on the prompt.
  function measure() {
    var times = [], worker = [], drawn = [], result = { model: model.config }, updates = Math.max(6, +hash.updates || 0);
    function median(a) { var s = a.slice(1).sort(function (x, y) { return x - y; }); return s[s.length >> 1]; }
    onViewed = function (answer, ms, workerMs, drawMs) {
      if (answer.error) { onViewed = null; finish('refused', { error: answer.error }); return; }
      times.push(ms);
      worker.push(workerMs);
      drawn.push(drawMs);
      if (times.length < updates) { setTimeout(update, 0); return; }
      onViewed = null;
      result.update_ms = median(times);
      result.update_worker_ms = median(worker);
      result.update_draw_ms = median(drawn);
      result.update_times = times.map(Math.round);
      result.update_worker_times = worker.map(Math.round);
      result.update_draw_times = drawn.map(function (x) { return x === null ? null : Math.round(x); });
      result.inspector_bits_per_char = answer.bits_per_char;
      // one more, every view drawn in place and read back
      checkViews = true;
      onViewed = function (answer, ms, workerMs, drawMs, views) {
        onViewed = null;
        result.inspector_views = views || null;
        score();
      };
      update();
    };
    update();
    function score() {
      var out = '';
      generate(['--score', '/tmp/prompt.txt'], function (s) { out += s; }, function (status, err) {
        var m = out.match(/([0-9.]+) bits\/char/);
        result.bits_per_char = m ? m[1] : null;
        if (status !== 0) result.score_error = err.trim();
        greedy();
      });
    }
    function greedy() {
      var out = '', prompt = $('prompt').value;
      generate(['-n', '50', '-t', '0', '--', prompt], function (s) { out += s; }, function (status, err) {
        result.greedy = Array.from(out.replace(/\n$/, '')).slice(Array.from(prompt).length).join('');
        if (status !== 0) result.greedy_error = err.trim();
        finish('inspected', result);
      });
    }
  }
})();
