"""Tiny randomly initialized Qwen2-VL, Qwen2.5-VL and Qwen3-VL models (no weights downloaded), for
tests/test_mrope.py and tests/test_pytorch_mrope.py: 2 text layers of width 64, 1 vision layer."""

import torch
import transformers

VOCAB, IMAGE, VIDEO, START, END = 128, 120, 121, 122, 123  # the vision tokens at the end
TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
            rope_theta=1000000.0)
TOKENS = dict(image_token_id=IMAGE, video_token_id=VIDEO, vision_start_token_id=START,
              vision_end_token_id=END)
VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, spatial_merge_size=2,
              temporal_patch_size=2, in_channels=3)
#: The patch size of each family's vision model (as in the real ones).
PATCH = {"qwen2_vl": 14, "qwen2_5_vl": 14, "qwen3_vl": 16}


def tiny_config(family: str):
    """A small config of the family: head_dim 16 with mrope_section [2, 3, 3] (Qwen2-VL,
    Qwen2.5-VL, in their transformers 4 spelling), head_dim 32 with [6, 5, 5] (Qwen3-VL,
    interleaved: the proportions of its real [24, 20, 20])."""
    if family == "qwen2_vl":
        vision = dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2,
                      patch_size=14, spatial_merge_size=2, temporal_patch_size=2, in_channels=3)
    elif family == "qwen2_5_vl":
        vision = dict(VISION, out_hidden_size=64, patch_size=14, window_size=56,
                      fullatt_block_indexes=[0])
    if family in ("qwen2_vl", "qwen2_5_vl"):
        return transformers.AutoConfig.for_model(
            family, **TEXT, **TOKENS, vision_config=vision, pad_token_id=0, bos_token_id=None,
            eos_token_id=None, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]})
    text = dict(TEXT, head_dim=32, pad_token_id=0, bos_token_id=None, eos_token_id=None,
                rope_scaling={"rope_type": "default", "mrope_section": [6, 5, 5],
                              "mrope_interleaved": True})
    vision = dict(VISION, out_hidden_size=64, patch_size=16, num_position_embeddings=64,
                  deepstack_visual_indexes=[0])
    return transformers.AutoConfig.for_model(family, text_config=text, vision_config=vision,
                                             **TOKENS)


def tiny_model(family: str, *, seed: int = 0):
    """The family's ``...ForConditionalGeneration`` with random weights (seeded), in eval mode."""
    torch.manual_seed(seed)
    config = tiny_config(family)
    return transformers.AutoModelForImageTextToText.from_config(config).eval()


def text_image_prompt(grid: tuple, *, seed: int = 0):
    """``(input_ids, mm_token_type_ids)`` of 5 text tokens, an image of ``grid`` = (t, h, w)
    patches between its start and end tokens, then 4 text tokens; batch of one."""
    generator = torch.Generator().manual_seed(seed)
    tokens = grid[0] * grid[1] * grid[2] // 4  # the 2 x 2 merge
    input_ids = torch.cat([torch.randint(1, IMAGE, (1, 5), generator=generator),
                           torch.tensor([[START] + [IMAGE] * tokens + [END]]),
                           torch.randint(1, IMAGE, (1, 4), generator=generator)], dim=1)
    return input_ids, (input_ids == IMAGE).int()


def pixels(family: str, grid: tuple, *, seed: int = 0) -> torch.Tensor:
    """Random ``pixel_values`` for one image of ``grid`` patches, as the processor flattens them."""
    generator = torch.Generator().manual_seed(seed)
    side = PATCH[family]
    return torch.randn(grid[0] * grid[1] * grid[2], 3 * 2 * side * side, generator=generator)
