// emscripten's JS library for common/platform.c's WebAssembly version: platform_wasm_page_signal,
// through which the page's worker (web/worker.js: Module.pageSignal) answers each
// platform_signals_poll with a stop signal, or 0, after as long a pause as the person asked
// for: it may suspend the program there (asyncify, in the page's build). Without a page (node:
// make test-wasm, build-wasm/train.js) no signal comes.
mergeInto(LibraryManager.library, {
  platform_wasm_page_signal: function () {
    var page = Module['pageSignal'];
#if ASYNCIFY
    if (page) return Asyncify.handleSleep(page);
#endif
    return 0;
  },
});
