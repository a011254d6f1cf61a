// ONNX (onnx.proto: IR version 8, opset 17), written from a model in protobuf's wire format
// (protobuf.h): a ModelProto whose graph is the model's forward pass,
//   input_ids: int64 [batch, sequence]  ->  logits: float [batch, sequence, vocab]
// for a sequence of 1 to block_size tokens; every sequence of a batch attends to its own
// positions only (causal, no padding). The parameters are initializers under their
// checkpoint names and shapes (format/checkpoint.h), F32: the linear layers are Gemm nodes
// with transB = 1 (x W^T + b, nn.Linear's), and the output head reads transformer.wte.weight
// (tied: stored once). A RoPE model's rotation is in the graph, its angles two initializers
// rope.cos and rope.sin [block_size, head_size / 2, 1] (model/layers.h's rope_angles).
// The model's metadata_props: "vocab" (a JSON array of code points, token i the i-th, as
// the checkpoint's), "vocab_unknown" (the unknown token's code point, when there is one),
// "block_size", "position_encoding" (learned or rope) and "name".
//
// The ops are opset 17's: Shape, Concat, ConstantOfShape, Trilu, Cast, Gather, Slice, Add,
// Sub, Mul, Reshape, LayerNormalization, Gemm, Transpose, Split, MatMul, Where, Softmax, Tanh
// (GELU in its tanh form, composed: Gelu came in opset 20).
#ifndef CHARGPT_ONNX_H
#define CHARGPT_ONNX_H

#include "../data/vocab.h"
#include "../model/gpt.h"

#define ONNX_IR_VERSION 8
#define ONNX_OPSET 17
#define ONNX_MAX_BYTES 2147483647.0  // protobuf's limit of a message (2 GiB - 1)

// ONNX's TensorProto data types used here
#define ONNX_FLOAT 1
#define ONNX_INT64 7
#define ONNX_BOOL 9

typedef struct {
    double bytes;  // the file's size
} OnnxSummary;

// Whether one ONNX file carries a model of config c (protobuf's 2 GiB; chargpt writes no
// external data): 0, or -1 with err saying why not.
int onnx_check_config(const GPTConfig *c, char err[ERR_LEN]);
// The memory onnx_export takes besides the model's, at most: the graph but the parameters,
// built in memory (the parameters are written from the model's own).
double onnx_export_memory(const GPTConfig *c);

// Writes model (its vocabulary vocab, its metadata "name") to path atomically: over a file
// there when replace is 1, else only while nothing is there (ATOMIC_FILE_EXISTS when
// something is). Returns 0 with *summary, or -1 with err (nothing written).
int onnx_export(const char *path, const GPT *model, const Vocab *vocab, const char *name, int replace,
                OnnxSummary *summary, char err[ERR_LEN]);

#endif
