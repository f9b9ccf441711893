"""StableToolBench's solvable query files at the pinned commit, known by their SHA-256.

Source: THUNLP-MT/StableToolBench @ aa4ed9f, ``solvable_queries/test_instruction/{GROUP}.json`` and
``solvable_queries/test_query_ids/{GROUP}.json`` (the files data/stabletoolbench ships byte for byte). A query
folder whose files have these digests is StableToolBench's 765 solvable queries; `tba data fetch` refuses
files that do not, and `tba doctor` says whether a --stb-root holds them.
"""

from __future__ import annotations

UPSTREAM_COMMIT = "aa4ed9f4737ad98bd706663f01d63623c3427812"
SOLVABLE_QUERY_COUNT = 765  # the ids files select 163 + 153 + 158 + 106 + 124 + 61

# path under a checkout's root -> SHA-256 of the file's bytes at UPSTREAM_COMMIT
QUERY_FILE_SHA256 = {
    "solvable_queries/test_instruction/G1_category.json": "123cb9073c8b6e6473df91c8a51170277087e1c263eba2eb6077170edbe849c3",
    "solvable_queries/test_instruction/G1_instruction.json": "500aa0105ed451538448f6ea04f10661536b013f3e1a293840fe401688160e7c",
    "solvable_queries/test_instruction/G1_tool.json": "05d0c180bbec9d060fd267cc79399bda05beddd0a6d0de68b5488926a9029a1a",
    "solvable_queries/test_instruction/G2_category.json": "71e18112f7940934f159d623b1c2b4740b1b4dc58a0b596c63b8151abbf8267e",
    "solvable_queries/test_instruction/G2_instruction.json": "82d569cd0fc8fc742a15a3011fb5cd6a8b11e0a5b344c884602347439f43cad7",
    "solvable_queries/test_instruction/G3_instruction.json": "f923d1a9452646bd1a415b266117d90675d0f8fc04cf014db58d3cd78c25634f",
    "solvable_queries/test_query_ids/G1_category.json": "f449a1cc1273b7dc4b77ab5db4fc4fe5593f6ac681d0b5bd579c74c0a786c589",
    "solvable_queries/test_query_ids/G1_instruction.json": "b3dae86a67ce471413df4c734034b0c729357aebb233242a444cc2b8380f2f7f",
    "solvable_queries/test_query_ids/G1_tool.json": "8a0335fc7abaf657a8c99389c06182d542e094a65d7485cde013e229954793a4",
    "solvable_queries/test_query_ids/G2_category.json": "f2b9dea1741cfd948e9e3c40b5b580bb6c3ab325768e3090a0ca9114379024a3",
    "solvable_queries/test_query_ids/G2_instruction.json": "fa4724a27852558c3cebd7a7fb144c9547c369cc340f535be6f0514282dd4e96",
    "solvable_queries/test_query_ids/G3_instruction.json": "6cc8630db8a2a1219f5045fb482fbbaee96071ab11531cba3151d410d9f8f175",
}
