// Runs a model that `./generate CKPT --export MODEL.gguf` wrote in llama.cpp (node-llama-cpp's
// prebuilt linux-x64 library, CPU only) and compares it with ./generate running CKPT:
//   1. llama.cpp's tokens of each prompt are ./generate's, one a character, and read back as
//      the prompt;
//   2. at every position of each prompt, llama.cpp's log-probabilities of every token are
//      within LIMIT of ./generate's logits less their log-sum-exp (node-llama-cpp gives the
//      probabilities, softmax of llama.cpp's logits, not the logits: a logit less the
//      log-sum-exp of its row is what a probability's log keeps of it);
//   3. (given GREEDY.txt) llama.cpp's greedy text with its own key/value cache, as far as the
//      block reaches, is ./generate's;
//   4. and its greedy text for the whole of GREEDY.txt, each character from the last
//      block_size characters evaluated afresh (./generate's window past the block), is too.
// The key/value cache is F32 (llama.cpp's default F16 one moves the log-probabilities by
// about 2e-3), flash attention is off, the context twice the block (node-llama-cpp keeps its
// context's last place free: a block's last token would find the context shifted first), and llama.cpp runs one thread: its threads spin while
// they wait for each other, and on a 2-core machine shared with other work its default team
// took 6 s to evaluate 15 positions that one thread evaluated in 0.05 s.
//
// usage: node check_gguf.mjs MODEL.gguf LOGITS.json... [--greedy GREEDY.txt]
//   each LOGITS.json: ./generate CKPT PROMPT -n 0 --logits LOGITS.json (the first one's PROMPT
//                     is GREEDY.txt's)
//   GREEDY.txt:       ./generate CKPT PROMPT -n N -t 0 > GREEDY.txt (PROMPT, N characters and a
//                     newline; for a RoPE model --no-cache too: the exact window past the
//                     block, not the rolling cache)
// Exit status: 0 the same, 1 a difference (said on stderr), 2 bad usage.
import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const LIMIT = 1e-3;

function fail(message) {
    console.error(`check_gguf: ${message}`);
    process.exit(1);
}

// log(sum(exp(row))) in double precision
function logSumExp(row) {
    const max = Math.max(...row);
    return max + Math.log(row.reduce((sum, x) => sum + Math.exp(x - max), 0));
}

// The largest |llama.cpp's log p - chargpt's| over every position and token.
async function compareLogProbabilities(sequence, tokens, reference, vocabSize) {
    const results = await sequence.controlledEvaluate(tokens.map(t => [t, {generateNext: {probabilities: true}}]));
    let worst = 0, where = "";
    results.forEach((result, i) => {
        const probabilities = result.next.probabilities, row = reference.logits[i], norm = logSumExp(row);
        if (probabilities.size !== vocabSize)
            fail(`position ${i}: llama.cpp gave ${probabilities.size} probabilities, the vocabulary has ${vocabSize}`);
        for (let v = 0; v < vocabSize; v++) {
            const difference = Math.abs(Math.log(probabilities.get(v)) - (row[v] - norm));
            if (!(difference <= worst)) worst = difference, where = `position ${i}, token ${v}`;
        }
    });
    return {worst, where};
}

// Greedy tokens after `tokens` from llama.cpp's own decoding loop, with its cache.
async function greedyCached(sequence, tokens, count) {
    const made = [];
    if (count <= 0) return made;
    for await (const token of sequence.evaluate(tokens, {temperature: 0})) {
        made.push(token);
        if (made.length === count) break;
    }
    return made;
}

// Greedy tokens after `tokens`, each from the last `window` tokens evaluated afresh.
async function greedyWindowed(sequence, tokens, count, window) {
    const text = [...tokens];
    for (let n = 0; n < count; n++) {
        await sequence.clearHistory();
        const last = text.slice(-window);
        const input = last.map((t, i) => (i === last.length - 1 ? [t, {generateNext: {token: true, options: {temperature: 0}}}] : t));
        const results = await sequence.controlledEvaluate(input);
        text.push(results[last.length - 1].next.token);
    }
    return text.slice(tokens.length);
}

function firstDifference(a, b) {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return i;
}

// Checks one prompt's tokens and log-probabilities; returns the largest difference.
async function checkPrompt(model, sequence, path) {
    const reference = JSON.parse(fs.readFileSync(path, "utf8"));
    const prompt = reference.chars.join("");
    const tokens = model.tokenize(prompt, false);
    if (JSON.stringify(tokens) !== JSON.stringify(reference.tokens))
        fail(`${path}: llama.cpp's tokens ${JSON.stringify(tokens)} are not ./generate's ${JSON.stringify(reference.tokens)}`);
    if (model.detokenize(tokens) !== prompt)
        fail(`${path}: llama.cpp reads the prompt's tokens back as ${JSON.stringify(model.detokenize(tokens))}`);
    await sequence.clearHistory();
    const {worst, where} = await compareLogProbabilities(sequence, tokens, reference, reference.logits[0].length);
    if (!(worst <= LIMIT)) fail(`${path}: log-probabilities differ by ${worst.toExponential(2)} at ${where}, more than ${LIMIT}`);
    return {worst, tokens, positions: tokens.length, vocabSize: reference.logits[0].length};
}

// Checks the greedy text of GREEDY.txt after `tokens`, its start; returns what was compared.
async function checkGreedy(model, sequence, tokens, greedyPath) {
    const prompt = model.detokenize(tokens), block = model.trainContextSize;
    const greedyText = fs.readFileSync(greedyPath, "utf8").replace(/\n$/, "");
    if (!greedyText.startsWith(prompt)) fail(`${greedyPath} does not start with the prompt ${JSON.stringify(prompt)}`);
    const expected = [...greedyText.slice(prompt.length)];
    await sequence.clearHistory();
    const cachedCount = Math.min(expected.length, block - tokens.length);
    const cached = model.detokenize(await greedyCached(sequence, tokens, cachedCount));
    const cachedExpected = expected.slice(0, cachedCount).join("");
    if (cached !== cachedExpected) {
        const at = firstDifference([...cached], [...cachedExpected]);
        fail(`greedy text with llama.cpp's cache differs at character ${at}: ${JSON.stringify(cached)} vs ./generate's ${JSON.stringify(cachedExpected)}`);
    }
    const windowed = model.detokenize(await greedyWindowed(sequence, tokens, expected.length, block));
    if (windowed !== expected.join("")) {
        const at = firstDifference([...windowed], expected);
        fail(`greedy text of windows of ${block} differs at character ${at}: ${JSON.stringify(windowed)} vs ./generate's ${JSON.stringify(expected.join(""))}`);
    }
    return `; greedy text the same: ${cachedCount} characters with llama.cpp's cache, ${expected.length} with windows of ${block}`;
}

async function main() {
    const args = process.argv.slice(2), greedyAt = args.indexOf("--greedy");
    const greedyPath = greedyAt >= 0 ? args.splice(greedyAt, 2)[1] : null;
    const [modelPath, ...logitsPaths] = args;
    if (logitsPaths.length === 0 || (greedyAt >= 0 && !greedyPath)) {
        console.error("usage: node check_gguf.mjs MODEL.gguf LOGITS.json... [--greedy GREEDY.txt]");
        process.exit(2);
    }
    const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
    const model = await llama.loadModel({modelPath});
    const block = model.trainContextSize;
    const context = await model.createContext({contextSize: 2 * block, threads: 1, sequences: 1, flashAttention: false,
        experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
    const sequence = context.getSequence();
    let worst = 0, positions = 0, first = null, vocabSize = 0;
    for (const path of logitsPaths) {
        const result = await checkPrompt(model, sequence, path);
        worst = Math.max(worst, result.worst), positions += result.positions, first ??= result.tokens;
        vocabSize = result.vocabSize;
    }
    const greedy = greedyPath ? await checkGreedy(model, sequence, first, greedyPath) : "";
    console.log(`${modelPath}: llama.cpp (node-llama-cpp 3.21.1): ${logitsPaths.length} prompts' tokens are ./generate's; ` +
        `log-probabilities within ${worst.toExponential(2)} of ./generate's over ${positions} positions x ` +
        `${vocabSize} tokens (limit ${LIMIT})${greedy}`);
    await llama.dispose();
}

main().catch(e => fail(e.stack || String(e)));
