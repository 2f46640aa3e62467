"""Builds, inside a test, a tiny but real flashrank model folder: a BERT tokenizer and an ONNX graph
that scores a (question, passage) pair by how many passage tokens also occur in the question.

It exercises flashrank's real loading, tokenisation and ONNX inference (and our adapter around
them) without the real ms-marco model, which cannot be downloaded here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from carrag.services.embedders.local_onnx import default_tokenizer_path

MODEL_NAME = "ms-marco-MiniLM-L-12-v2"
MODEL_FILE = "flashrank-MiniLM-L-12-v2_Q.onnx"


def _overlap_graph() -> onnx.ModelProto:
    """logits[b] = Σ_j [type_ids[b,j] == 1] · [ids[b,j] ∈ {ids[b,i] : type_ids[b,i] == 0, i > 0}]"""
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
    types = helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "seq"])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [
        helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", TensorProto.INT64, [], [1])),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("zero", TensorProto.INT64, [], [0])),
        helper.make_node("Constant", [], ["axis2"], value=helper.make_tensor("axis2", TensorProto.INT64, [1], [2])),
        helper.make_node("Constant", [], ["axis1"], value=helper.make_tensor("axis1", TensorProto.INT64, [1], [1])),
        helper.make_node("Constant", [], ["cls"], value=helper.make_tensor("cls", TensorProto.INT64, [], [101])),
        helper.make_node("Constant", [], ["sep"], value=helper.make_tensor("sep", TensorProto.INT64, [], [102])),
        # question tokens: type 0, real (mask 1), not [CLS]/[SEP]
        helper.make_node("Equal", ["token_type_ids", "zero"], ["is_q"]),
        helper.make_node("Equal", ["attention_mask", "one"], ["is_real"]),
        helper.make_node("Equal", ["input_ids", "cls"], ["is_cls"]),
        helper.make_node("Equal", ["input_ids", "sep"], ["is_sep"]),
        helper.make_node("Or", ["is_cls", "is_sep"], ["is_special"]),
        helper.make_node("Not", ["is_special"], ["not_special"]),
        helper.make_node("And", ["is_q", "is_real"], ["q_real"]),
        helper.make_node("And", ["q_real", "not_special"], ["q_token"]),
        helper.make_node("Equal", ["token_type_ids", "one"], ["p_token"]),
        # pairwise equality ids[b, i] == ids[b, j]  → [batch, seq_i, seq_j]
        helper.make_node("Unsqueeze", ["input_ids", "axis2"], ["ids_i"]),
        helper.make_node("Unsqueeze", ["input_ids", "axis1"], ["ids_j"]),
        helper.make_node("Equal", ["ids_i", "ids_j"], ["same"]),
        helper.make_node("Unsqueeze", ["q_token", "axis2"], ["q_i"]),
        helper.make_node("And", ["same", "q_i"], ["same_as_q"]),
        helper.make_node("Cast", ["same_as_q"], ["same_as_q_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceMax", ["same_as_q_f", "axis1"], ["matched"], keepdims=0),  # [batch, seq_j]
        helper.make_node("Cast", ["p_token"], ["p_token_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["matched", "p_token_f"], ["matched_p"]),
        helper.make_node("ReduceSum", ["matched_p", "axis1"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "token_overlap_cross_encoder", [ids, mask, types], [logits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def make_model_folder(cache_dir: Path) -> Path:
    folder = cache_dir / MODEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(_overlap_graph(), folder / MODEL_FILE)
    shutil.copy(default_tokenizer_path(), folder / "tokenizer.json")
    (folder / "config.json").write_text(json.dumps({"pad_token_id": 0}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 512, "pad_token": "[PAD]"}))
    (folder / "special_tokens_map.json").write_text(
        json.dumps(
            {
                "unk_token": "[UNK]",
                "sep_token": "[SEP]",
                "pad_token": "[PAD]",
                "cls_token": "[CLS]",
                "mask_token": "[MASK]",
            }
        )
    )
    return folder
