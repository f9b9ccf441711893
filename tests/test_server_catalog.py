"""What the server knows about APIs: query files plus the optional tool environment."""

from __future__ import annotations

import json

from toolbench_adapter.server.catalog import ApiCatalog
from toolbench_adapter.server.names import api_key_for


def test_tool_env_adds_descriptions_and_apis(tmp_path):
    tool = {"tool_name": "Sky Tool", "tool_description": "Weather for everyone.",
            "api_list": [{"name": "Now", "description": "Current weather.", "required_parameters": [],
                          "optional_parameters": [], "method": "GET"}]}
    (tmp_path / "Weather").mkdir()
    (tmp_path / "Weather" / "sky_tool.json").write_text(json.dumps(tool))
    (tmp_path / "Weather" / "broken.json").write_text("{nope")  # skipped with a warning, not fatal
    catalog = ApiCatalog()
    catalog.add_tool_env(tmp_path)
    doc = catalog.get(api_key_for("Weather", "sky_tool", "now"))
    assert doc.tool_description == "Weather for everyone." and doc.api_description == "Current weather."
    assert catalog.unknown_part(api_key_for("Weather", "sky_tool", "later")) == "api_name"
    assert catalog.unknown_part(api_key_for("Weather", "rain_tool", "now")) == "tool_name"
    assert catalog.unknown_part(api_key_for("Sports", "sky_tool", "now")) == "category"


def test_empty_catalog_validates_nothing():
    assert ApiCatalog().unknown_part(api_key_for("Any", "thing", "goes")) is None
