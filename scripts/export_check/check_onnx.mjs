// Runs a model that `./generate CKPT --export MODEL.onnx` wrote in ONNX Runtime (onnxruntime-node's
// CPU build) and compares its logits with ./generate's running CKPT: the prompts of equal
// length go in one batch, input_ids [batch, sequence], and every row of the output logits
// [batch, sequence, vocabulary] must be within LIMIT of its prompt's, at every position and
// token.
//
// usage: node check_onnx.mjs MODEL.onnx LOGITS.json...
//   each LOGITS.json: ./generate CKPT PROMPT -n 0 --logits LOGITS.json
// Exit status: 0 the same, 1 a difference (said on stderr), 2 bad usage.
import fs from "node:fs";
import ort from "onnxruntime-node";

const LIMIT = 1e-4;

function fail(message) {
    console.error(`check_onnx: ${message}`);
    process.exit(1);
}

// The prompts grouped by length: Map length -> [{path, tokens, logits}].
function batchesOf(paths) {
    const batches = new Map();
    for (const path of paths) {
        const prompt = JSON.parse(fs.readFileSync(path, "utf8"));
        const batch = batches.get(prompt.tokens.length) || [];
        batch.push({path, ...prompt});
        batches.set(prompt.tokens.length, batch);
    }
    return batches;
}

// The largest |ONNX Runtime's logit - chargpt's| over a batch, and where.
async function compareBatch(session, batch, length) {
    const ids = BigInt64Array.from(batch.flatMap(p => p.tokens.map(BigInt)));
    const {logits} = await session.run({input_ids: new ort.Tensor("int64", ids, [batch.length, length])});
    const V = batch[0].logits[0].length;
    if (JSON.stringify(logits.dims) !== JSON.stringify([batch.length, length, V]))
        fail(`logits of shape [${logits.dims}] for input_ids [${batch.length}, ${length}], not [${batch.length}, ${length}, ${V}]`);
    let worst = 0, where = "";
    batch.forEach((prompt, b) => {
        for (let i = 0; i < length; i++)
            for (let v = 0; v < V; v++) {
                const difference = Math.abs(logits.data[(b * length + i) * V + v] - prompt.logits[i][v]);
                if (!(difference <= worst)) worst = difference, where = `${prompt.path}, position ${i}, token ${v}`;
            }
    });
    return {worst, where, V};
}

async function main() {
    const [modelPath, ...paths] = process.argv.slice(2);
    if (paths.length === 0) {
        console.error("usage: node check_onnx.mjs MODEL.onnx LOGITS.json...");
        process.exit(2);
    }
    const session = await ort.InferenceSession.create(modelPath, {executionProviders: ["cpu"], intraOpNumThreads: 1});
    if (session.inputNames.join() !== "input_ids" || session.outputNames.join() !== "logits")
        fail(`inputs ${session.inputNames} and outputs ${session.outputNames}, not input_ids and logits`);
    let worst = 0, where = "", shapes = [];
    for (const [length, batch] of batchesOf(paths)) {
        const result = await compareBatch(session, batch, length);
        shapes.push(`[${batch.length}, ${length}]`);
        if (!(result.worst <= worst)) ({worst, where} = result);
    }
    if (!(worst <= LIMIT)) fail(`logits differ by ${worst.toExponential(2)} at ${where}, more than ${LIMIT}`);
    console.log(`${modelPath}: ONNX Runtime (onnxruntime-node 1.30.0): logits within ${worst.toExponential(2)} of ./generate's ` +
        `(limit ${LIMIT}) for input_ids of ${shapes.join(", ")}`);
}

main().catch(e => fail(e.stack || String(e)));
