#!/usr/bin/env python3
"""validate-scenarios.py — check scenario files against the committed JSON Schema with a standard
validator (Debian python3-jsonschema, which scripts/setup.sh installs), independently of kvcheck's
own parser: what an editor using scenarios/schema/scenario.schema.json accepts must be valid.

  scripts/validate-scenarios.py              every scenarios/**/*.json except scenarios/schema/
  scripts/validate-scenarios.py FILE...      these files
  scripts/validate-scenarios.py --self-test  the check can fail: bad scenarios are refused
  scripts/validate-scenarios.py --schema scenarios/schema/run.schema.json FILE...
                                             other documents against another committed schema;
                                             a relative $ref resolves to the schema file beside it

Exits 0 when every file is valid, 1 naming each invalid file and its errors, 2 on a usage or
setup problem (no jsonschema module, an unreadable schema). Walks scenarios/ and runs itself
through scripts/kvcheck_lib.py.
"""
import argparse
import json
import pathlib
import sys
import tempfile

import kvcheck_lib as kv

REPO = kv.REPO
SCHEMA = REPO / "scenarios" / "schema" / "scenario.schema.json"

try:
    import jsonschema
except ImportError:
    print("validate-scenarios: the jsonschema module is missing; install python3-jsonschema "
          "(scripts/setup.sh does)", file=sys.stderr)
    sys.exit(2)


def schemas_beside(schema_path):
    """Every schema in the folder of schema_path, by its $id: what a relative $ref resolves to
    (run.schema.json's results are result.schema.json documents). Nothing is fetched."""
    found = {}
    for path in sorted(schema_path.parent.glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        if "$id" in schema:
            found[schema["$id"]] = schema
    return found


def load_validator(schema_path):
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)  # a broken schema must not pass every file
    store = schemas_beside(schema_path)
    try:
        import referencing  # jsonschema 4.18 and later
    except ImportError:  # Debian 12's python3-jsonschema (4.10): the resolver of its time
        return cls(schema, resolver=jsonschema.RefResolver.from_schema(schema, store=store))
    registry = referencing.Registry().with_resources(
        (uri, referencing.Resource.from_contents(s)) for uri, s in store.items())
    return cls(schema, registry=registry)


def located(error):
    """'pointer: message' as kvcheck writes it; the message alone for the document itself."""
    if not error.absolute_path:
        return error.message
    return "/" + "/".join(str(p) for p in error.absolute_path) + ": " + error.message


def errors_of(validator, path):
    """The errors of one file as 'pointer: message' lines; [] when it is valid."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return [f"cannot read: {e}"]
    found = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [located(e) for e in found]


def validate(files, schema_path):
    validator = load_validator(schema_path)
    bad = 0
    for path in files:
        errors = errors_of(validator, path)
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        if errors:
            bad += 1
            for e in errors:
                print(f"{shown}: {e}", file=sys.stderr)
        else:
            print(f"ok {shown}")
    if bad:
        print(f"validate-scenarios: {bad} of {len(files)} files do not match {schema_path.name}",
              file=sys.stderr)
    return 1 if bad else 0


# Each must be refused, with this pointer (or message): one per kind of rule the schema states.
BAD_SCENARIOS = {
    "out-of-range.json": ({"format": 1, "workload": {"epochs": 0}}, "/workload/epochs"),
    "above-maximum.json": ({"format": 1, "cache": {"block_size": 257}}, "/cache/block_size"),
    "unknown-key.json": ({"format": 1, "cache": {"colour": "red"}}, "/cache"),
    "bad-choice.json": ({"format": 1, "cache": {"dtype": "fp16"}}, "/cache/dtype"),
    "wrong-format.json": ({"format": 2}, "/format"),
    "no-format.json": ({"seed": 1}, "'format' is a required property"),
    "range-too-long.json": ({"format": 1, "workload": {"prompt_len": [1, 2, 3]}},
                            "/workload/prompt_len"),
}


def self_test():
    """Runs this script on bad and good temporary files and checks what it says."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def run(name, doc):
            path = pathlib.Path(tmp).resolve() / name
            path.write_text(json.dumps(doc), encoding="utf-8")
            return path, kv.run([sys.executable, __file__, str(path)])

        for name, (doc, where) in BAD_SCENARIOS.items():
            path, r = run(name, doc)
            if r.code != 1 or f"{path}: {where}" not in r.stderr:
                failures.append(f"{name}: expected exit 1 and '{path}: {where}', got exit "
                                f"{r.code}: {r.stderr.strip()}")
        _, r = run("minimal.json", {"format": 1})
        if r.code != 0:
            failures.append(f"minimal.json: expected exit 0, got {r.code}: {r.stderr}")
    for f in failures:
        print(f"validate-scenarios --self-test: {f}", file=sys.stderr)
    print(f"self-test: {len(BAD_SCENARIOS) + 1 - len(failures)} of {len(BAD_SCENARIOS) + 1} ok")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=pathlib.Path)
    parser.add_argument("--schema", type=pathlib.Path, default=SCHEMA)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    try:
        return validate([f.resolve() for f in args.files] or kv.scenario_files(), args.schema)
    except (OSError, json.JSONDecodeError, jsonschema.SchemaError) as e:
        print(f"validate-scenarios: cannot use the schema {args.schema}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
