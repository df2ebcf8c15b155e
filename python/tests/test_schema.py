"""Schema-guided coercion in the packages: `mend_args(text, schema=...)` with a JSON Schema dict
or a Pydantic model class, and `extract_calls(text, tools=...)`, as `toolmend args --schema` and
`toolmend calls --tools`."""

import subprocess

import pytest

import toolmend

PLAN = {
    "type": "object",
    "properties": {
        "days": {"type": "integer"},
        "ratio": {"type": "number"},
        "metric": {"type": "boolean"},
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {"type": "object", "properties": {"depth": {"type": "integer"}}},
    },
    "required": ["days"],
}


def test_a_schema_coerces_each_value_where_the_intent_is_unambiguous():
    text = (
        '{"days": "3", "ratio": "2.5", "metric": "true", "city": 10115, '
        '"unit": " Celsius ", "tags": "news", "options": "{\\"depth\\": \\"2\\"}"}'
    )
    assert toolmend.mend_args(text, schema=PLAN) == {
        "days": 3,
        "ratio": 2.5,
        "metric": True,
        "city": "10115",
        "unit": "celsius",
        "tags": ["news"],
        "options": {"depth": 2},
    }
    # Repairs first, then the schema.
    assert toolmend.mend_args("{days: '4', tags: ['a',],}", schema=PLAN) == {"days": 4, "tags": ["a"]}
    # Without a schema nothing is coerced.
    assert toolmend.mend_args('{"days": "3"}') == {"days": "3"}


@pytest.mark.parametrize(
    "text, path, message",
    [
        ('{"days": "3.7"}', "/days", '"3.7" is not of type "integer"'),
        ('{"days": 1, "metric": "yes"}', "/metric", '"yes" is not of type "boolean"'),
        ('{"days": "007"}', "/days", '"007" is not of type "integer"'),
        ('{"ratio": 1}', "/", '"days" is a required property'),
    ],
)
def test_what_cannot_be_coerced_without_loss_is_refused(text, path, message):
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args(text, schema=PLAN)
    assert e.value.code == "invalid_parameters"
    assert message in e.value.message
    assert [v["path"] for v in e.value.violations] == [path]
    assert e.value.violations[0]["keyword"] in ("type", "required")


def test_every_violation_is_listed_as_the_cli_lists_them(tmp_path):
    text = '{"days": "three", "unit": "kelvin"}'
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args(text, schema=PLAN)
    schema = tmp_path / "plan.json"
    schema.write_text(__import__("json").dumps(PLAN))
    cli = subprocess.run(
        [toolmend.binary_path(), "args", "--schema", str(schema), "--records"],
        input=text.encode(),
        capture_output=True,
        check=False,
    )
    record = __import__("json").loads(cli.stdout)
    assert e.value.message == record["error"]["message"]
    assert sorted(v["path"] for v in e.value.violations) == ["/days", "/unit"]


def test_strict_checks_the_schema_but_coerces_nothing():
    assert toolmend.mend_args('{"days": 3}', schema=PLAN, strict=True) == {"days": 3}
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args('{"days": "3"}', schema=PLAN, strict=True)
    assert e.value.code == "invalid_parameters"


def test_a_bad_schema_is_an_error():
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args("{}", schema=42)
    assert e.value.code == "invalid_input"
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args("{}", schema={"type": 5})
    assert e.value.code == "invalid_input"


def test_a_pydantic_model_class_is_a_schema():
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        qty: int
        name: str

    class Order(pydantic.BaseModel):
        items: list[Item]
        express: bool = False

    value = toolmend.mend_args(
        '{"items": [{"qty": "2", "name": "bolt"}, {"qty": 3, "name": 4}], "express": "True"}',
        schema=Order,
    )
    assert value == {"items": [{"qty": 2, "name": "bolt"}, {"qty": 3, "name": "4"}], "express": True}
    Order.model_validate(value)
    with pytest.raises(toolmend.Error) as e:
        toolmend.mend_args('{"items": [{"qty": "two", "name": "x"}]}', schema=Order)
    assert [v["path"] for v in e.value.violations] == ["/items/0/qty"]


TOOLS = [{"name": "plan", "description": "Plan a trip", "parameters": PLAN}]


def test_extract_calls_coerces_parameters_to_the_tools_schemas():
    found = toolmend.extract_calls(
        '<tool_call>{"name": "plan", "arguments": {"days": "3", "tags": "news"}}</tool_call>', tools=TOOLS
    )
    call = found["calls"][0]
    assert call["parameters"] == {"days": 3, "tags": ["news"]}
    assert {"kind": "schema_type", "path": "/days"} in call["repairs"]
    with pytest.raises(toolmend.Error) as e:
        toolmend.extract_calls('{"name": "plan", "arguments": {"days": "3.7"}}', tools=TOOLS)
    assert e.value.code == "invalid_parameters"
    assert e.value.violations[0]["path"] == "/days"
    with pytest.raises(toolmend.Error) as e:
        toolmend.extract_calls('{"name": "plan", "arguments": {"days": "3"}}', tools=TOOLS, strict=True)
    assert e.value.code == "invalid_parameters"


RECURSIVE = {
    "type": "object",
    "properties": {"v": {"$ref": "#/$defs/N"}},
    "$defs": {"N": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/N"}}]}},
}

RECURSIVE_CASE = """
import toolmend
from {module} import RECURSIVE
tools = [{{"name": "f", "parameters": RECURSIVE}}]
for call in (
    lambda: toolmend.mend_args('{{"v": "x"}}', schema=RECURSIVE),
    lambda: toolmend.extract_calls('<tool_call>{{"name": "f", "arguments": {{"v": "x"}}}}</tool_call>', tools=tools),
):
    try:
        call()
    except toolmend.Error as e:
        assert e.code == "invalid_parameters", e.code
    else:
        raise AssertionError("no error")
assert toolmend.mend_args('{{"v": [1, [2]]}}', schema=RECURSIVE) == {{"v": [1, [2]]}}
try:
    toolmend.mend_args("{{}}", schema={{"$defs": {{"x": {{"$ref": "#/$defs/x"}}}}, "$ref": "#/$defs/x"}})
except toolmend.Error as e:
    assert "never reaches a constraint" in str(e), str(e)
else:
    raise AssertionError("a $ref cycle that says nothing was taken")
print("ok")
"""


def test_a_recursive_schema_is_an_error_not_a_crash():
    # Issue 25.1: a value that fits no branch once killed the interpreter (SIGSEGV), so the case
    # runs in a child interpreter whose death the test can see.
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    child = subprocess.run(
        [sys.executable, "-c", RECURSIVE_CASE.format(module="test_schema")],
        cwd=here,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, (child.returncode, child.stderr)
    assert child.stdout == "ok\n"
