// Prepended to the programs built for node (build-wasm/*.js): the process's environment
// (CHARGPT_KERNELS, ...) becomes the module's, which emscripten otherwise fills with its own.
Module.preRun = Module.preRun || [];
Module.preRun.push(function () { Object.assign(ENV, process.env); });
