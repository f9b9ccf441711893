from toolbench_adapter.naming import (
    change_name,
    function_name,
    server_tool_folder,
    standardize,
    standardize_category,
)


def test_standardize_examples():
    assert standardize("Kick.com API | Kick API") == "kick_com_api_kick_api"
    assert standardize("TheClique") == "theclique"
    assert standardize("  __Hello--World__ ") == "hello_world"
    assert standardize("3D Models") == "get_3d_models"
    assert standardize("!!!") == ""
    # upstream's character class keeps a literal '^' (only the first '^' negates)
    assert standardize("a^b") == "a^b"
    assert standardize("天气 API") == "天气_api"


def test_change_name_reserved_words_only():
    assert change_name("id") == "is_id"
    assert change_name("from") == "is_from"
    assert change_name("identifier") == "identifier"
    assert change_name("ID") == "ID"


def test_category_normalisation():
    assert standardize_category("Video_Images") == "Video_Images"
    assert standardize_category("Data, Science") == "Data_Science"  # ", " -> "__" -> "_"
    assert standardize_category("a / b") == "a__b"  # "___" -> one pass of "__"->"_" leaves "__" (upstream)


def test_function_name_keeps_last_64_characters():
    api = "Get the very long name of an endpoint that goes on and on"
    tool = "some_tool_with_a_name"
    full = standardize(api) + "_for_" + tool
    assert len(full) > 64
    assert function_name(api, tool) == full[-64:]
    assert function_name("Search", "tool") == "search_for_tool"


def test_server_tool_folder():
    assert server_tool_folder("theclique", "Data") == "theclique_for_Data"
    assert server_tool_folder("theclique_for_Data", "Data") == "theclique_for_Data"
