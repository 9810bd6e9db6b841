//! The public API is a contract: `docs/public-api.txt` lists every item the facade makes
//! public (with its signature, fields, variants, methods and trait impls), and this test
//! regenerates that listing from rustdoc's JSON output and fails with the difference, so a
//! change to the API is seen in review. It also fails when a type reachable from the API
//! can be named only through a member crate (`hooktrack_core::…`): every reachable type is
//! nameable through the facade.
//!
//! Update the listing after a deliberate change with:
//!
//! ```text
//! HOOKTRACK_UPDATE_PUBLIC_API=1 cargo test --test integration public_api
//! ```
//!
//! rustdoc's JSON output is unstable: it is produced on a stable toolchain with
//! `RUSTC_BOOTSTRAP=1`, and this reader knows one format version. Another version fails the
//! test with a message saying so, never a silent pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The rustdoc JSON format version this reader understands (rustdoc-types' `FORMAT_VERSION`).
const FORMAT_VERSION: u64 = 57;

/// The facade first; the member crates whose items it re-exports after it.
const CRATES: [&str; 4] = [
    "hooktrack",
    "hooktrack_core",
    "hooktrack_live",
    "hooktrack_producer",
];

const LISTING: &str = "docs/public-api.txt";
const UPDATE_ENV: &str = "HOOKTRACK_UPDATE_PUBLIC_API";
const UPDATE_COMMAND: &str =
    "HOOKTRACK_UPDATE_PUBLIC_API=1 cargo test --test integration public_api";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs rustdoc's JSON output for the four library crates in a target folder of its own
/// (it does not wait on the build that runs this test) and returns where the files are.
fn rustdoc_json() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("public-api");
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(root())
        .args(["doc", "--no-deps", "--lib", "--locked", "--offline"])
        .args(
            CRATES
                .iter()
                .flat_map(|c| ["-p".to_owned(), c.replace('_', "-")]),
        )
        .env("CARGO_TARGET_DIR", &target)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json")
        // Flags the caller set for its own build would override or change these.
        .env_remove("CARGO_ENCODED_RUSTDOCFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS");
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo doc (rustdoc JSON) failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    target.join("doc")
}

/// One crate's rustdoc JSON.
struct Crate {
    index: serde_json::Map<String, Value>,
    paths: serde_json::Map<String, Value>,
    root: String,
    /// This crate's own items by their definition path.
    by_path: BTreeMap<String, String>,
}

impl Crate {
    fn load(dir: &Path, name: &'static str) -> Crate {
        let file = dir.join(format!("{name}.json"));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let json: Value = serde_json::from_str(&text).expect("rustdoc JSON");
        let version = json["format_version"].as_u64().unwrap_or(0);
        assert_eq!(
            version, FORMAT_VERSION,
            "{name}.json is rustdoc JSON format version {version}, but tests/public_api.rs \
             reads version {FORMAT_VERSION}: the toolchain changed the format. Teach the reader \
             the new version (rustdoc-types' changelog says what moved), set FORMAT_VERSION, and \
             regenerate the listing with `{UPDATE_COMMAND}`"
        );
        let take = |key: &str| match &json[key] {
            Value::Object(map) => map.clone(),
            _ => panic!("{name}.json has no {key}"),
        };
        let (index, paths) = (take("index"), take("paths"));
        let by_path = paths
            .iter()
            .filter(|(_, summary)| summary["crate_id"] == 0)
            .map(|(id, summary)| (joined(&summary["path"]), id.clone()))
            .collect();
        Crate {
            index,
            paths,
            root: json["root"].to_string(),
            by_path,
        }
    }

    fn item(&self, id: &str) -> &Value {
        &self.index[id]
    }
}

fn joined(path: &Value) -> String {
    path.as_array()
        .map(|segments| {
            segments
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("::")
        })
        .unwrap_or_default()
}

fn id_of(value: &Value) -> Option<String> {
    value.as_u64().map(|n| n.to_string())
}

/// The kind of an item (`struct`, `function`, …) and its body.
fn inner(item: &Value) -> (&str, &Value) {
    item["inner"]
        .as_object()
        .and_then(|map| map.iter().next())
        .map(|(kind, body)| (kind.as_str(), body))
        .unwrap_or(("", &Value::Null))
}

/// An item of one of the crates: (crate's position in `CRATES`, id).
type ItemRef = (usize, String);

struct Api {
    crates: Vec<Crate>,
    /// Every facade path and the item it names; a path that re-exports something outside
    /// the workspace keeps that item's path instead.
    exports: BTreeMap<String, Export>,
}

enum Export {
    Item(ItemRef),
    Foreign(String),
}

impl Api {
    fn load(dir: &Path) -> Api {
        let crates = CRATES.iter().map(|name| Crate::load(dir, name)).collect();
        let mut api = Api {
            crates,
            exports: BTreeMap::new(),
        };
        let root = (0, api.crates[0].root.clone());
        api.walk(&root, "hooktrack", 0);
        api
    }

    /// The definition path of the item `id` names in crate `c`'s JSON.
    fn definition(&self, c: usize, id: &str) -> Option<String> {
        self.crates[c].paths.get(id).map(|s| joined(&s["path"]))
    }

    /// Where the item `id` of crate `c`'s JSON is described: in that JSON, or, for an item
    /// of another workspace crate, in that crate's.
    fn resolve(&self, c: usize, id: &str) -> Option<ItemRef> {
        if self.crates[c].index.contains_key(id) && self.crates[c].item(id)["crate_id"] == 0 {
            return Some((c, id.to_owned()));
        }
        let path = self.definition(c, id)?;
        let owner = path.split("::").next()?;
        let other = CRATES.iter().position(|name| *name == owner)?;
        let found = self.crates[other].by_path.get(&path)?;
        Some((other, found.clone()))
    }

    fn walk(&mut self, module: &ItemRef, prefix: &str, depth: usize) {
        assert!(depth < 16, "re-exports nest deeper than 16 at {prefix}");
        let (c, id) = module;
        let items: Vec<String> = inner(self.crates[*c].item(id)).1["items"]
            .as_array()
            .map(|a| a.iter().filter_map(id_of).collect())
            .unwrap_or_default();
        for child in items {
            let item = self.crates[*c].item(&child).clone();
            if item["visibility"] != "public" {
                continue;
            }
            let (kind, body) = inner(&item);
            if kind == "use" {
                let name = body["name"].as_str().unwrap_or_default();
                let target = id_of(&body["id"]).and_then(|t| self.resolve(*c, &t).map(|r| (t, r)));
                match (target, body["is_glob"].as_bool() == Some(true)) {
                    (Some((_, found)), true) => self.walk(&found, prefix, depth + 1),
                    (Some((_, found)), false) => {
                        let path = format!("{prefix}::{name}");
                        if inner(self.crates[found.0].item(&found.1)).0 == "module" {
                            self.walk(&found, &path, depth + 1);
                        }
                        self.exports.insert(path, Export::Item(found));
                    }
                    (None, _) => {
                        let source = id_of(&body["id"])
                            .and_then(|t| self.definition(*c, &t))
                            .unwrap_or_else(|| body["source"].as_str().unwrap_or("").to_owned());
                        self.exports
                            .insert(format!("{prefix}::{name}"), Export::Foreign(source));
                    }
                }
                continue;
            }
            let Some(name) = item["name"].as_str() else {
                continue;
            };
            let path = format!("{prefix}::{name}");
            let found = (*c, child.clone());
            if kind == "module" {
                self.walk(&found, &path, depth + 1);
            }
            self.exports.insert(path, Export::Item(found));
        }
    }
}

/// Renders items and types with the facade's names, and notes every workspace type it
/// meets that has none.
struct Renderer<'a> {
    api: &'a Api,
    /// Definition path → the facade path that names it (the shortest).
    names: BTreeMap<String, String>,
    unnameable: BTreeSet<String>,
}

impl<'a> Renderer<'a> {
    fn new(api: &'a Api) -> Renderer<'a> {
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for (path, export) in &api.exports {
            if let Export::Item((c, id)) = export {
                let Some(definition) = api.definition(*c, id) else {
                    continue;
                };
                let better = names.get(&definition).is_none_or(|known| {
                    (known.matches("::").count(), known.as_str())
                        > (path.matches("::").count(), path.as_str())
                });
                if better {
                    names.insert(definition, path.clone());
                }
            }
        }
        Renderer {
            api,
            names,
            unnameable: BTreeSet::new(),
        }
    }

    /// The name a path of crate `c`'s JSON is written with.
    fn name(&mut self, c: usize, id: Option<&Value>, written: &str) -> String {
        let Some(definition) = id
            .and_then(id_of)
            .and_then(|id| self.api.definition(c, &id))
        else {
            return written.to_owned();
        };
        if let Some(facade) = self.names.get(&definition) {
            return facade.clone();
        }
        let owner = definition.split("::").next().unwrap_or_default();
        if CRATES.contains(&owner) {
            self.unnameable.insert(definition.clone());
        }
        definition
    }

    fn path(&mut self, c: usize, path: &Value) -> String {
        let name = self.name(c, Some(&path["id"]), path["path"].as_str().unwrap_or("?"));
        format!("{name}{}", self.args(c, &path["args"]))
    }

    fn args(&mut self, c: usize, args: &Value) -> String {
        if let Some(angle) = args.get("angle_bracketed") {
            let mut parts: Vec<String> = Vec::new();
            for arg in angle["args"].as_array().into_iter().flatten() {
                parts.push(match arg {
                    Value::String(s) if s == "infer" => "_".to_owned(),
                    _ if arg.get("lifetime").is_some() => {
                        arg["lifetime"].as_str().unwrap_or("'_").to_owned()
                    }
                    _ if arg.get("type").is_some() => self.ty(c, &arg["type"]),
                    _ if arg.get("const").is_some() => {
                        arg["const"]["expr"].as_str().unwrap_or("_").to_owned()
                    }
                    _ => "?".to_owned(),
                });
            }
            for constraint in angle["constraints"].as_array().into_iter().flatten() {
                let name = constraint["name"].as_str().unwrap_or("?");
                let binding = &constraint["binding"];
                parts.push(if let Some(ty) = binding["equality"].get("type") {
                    format!("{name} = {}", self.ty(c, ty))
                } else if let Some(bounds) = binding.get("constraint") {
                    format!("{name}: {}", self.bounds(c, bounds))
                } else {
                    name.to_owned()
                });
            }
            return if parts.is_empty() {
                String::new()
            } else {
                format!("<{}>", parts.join(", "))
            };
        }
        if let Some(paren) = args.get("parenthesized") {
            let inputs: Vec<String> = paren["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| self.ty(c, t))
                .collect();
            let output = match &paren["output"] {
                Value::Null => String::new(),
                t => format!(" -> {}", self.ty(c, t)),
            };
            return format!("({}){output}", inputs.join(", "));
        }
        String::new()
    }

    fn bounds(&mut self, c: usize, bounds: &Value) -> String {
        let mut parts = Vec::new();
        for bound in bounds.as_array().into_iter().flatten() {
            if let Some(tb) = bound.get("trait_bound") {
                let modifier = if tb["modifier"] == "maybe" { "?" } else { "" };
                parts.push(format!("{modifier}{}", self.path(c, &tb["trait"])));
            } else if let Some(lt) = bound.get("outlives") {
                parts.push(lt.as_str().unwrap_or("'_").to_owned());
            } else {
                parts.push("use<..>".to_owned());
            }
        }
        parts.join(" + ")
    }

    fn ty(&mut self, c: usize, ty: &Value) -> String {
        let Some((kind, body)) = ty.as_object().and_then(|m| m.iter().next()) else {
            return ty
                .as_str()
                .map_or("?", |s| if s == "infer" { "_" } else { s })
                .to_owned();
        };
        match kind.as_str() {
            "resolved_path" => self.path(c, body),
            "generic" | "primitive" => body.as_str().unwrap_or("?").to_owned(),
            "tuple" => {
                let parts: Vec<String> = body
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| self.ty(c, t))
                    .collect();
                if parts.len() == 1 {
                    format!("({},)", parts[0])
                } else {
                    format!("({})", parts.join(", "))
                }
            }
            "slice" => format!("[{}]", self.ty(c, body)),
            "array" => format!(
                "[{}; {}]",
                self.ty(c, &body["type"]),
                body["len"].as_str().unwrap_or("_")
            ),
            "pat" => self.ty(c, &body["type"]),
            "borrowed_ref" | "raw_pointer" => {
                let lifetime = body["lifetime"]
                    .as_str()
                    .map(|l| format!("{l} "))
                    .unwrap_or_default();
                let mutable = body["is_mutable"] == true;
                let head = match (kind.as_str(), mutable) {
                    ("borrowed_ref", true) => format!("&{lifetime}mut "),
                    ("borrowed_ref", false) => format!("&{lifetime}"),
                    (_, true) => "*mut ".to_owned(),
                    (_, false) => "*const ".to_owned(),
                };
                format!("{head}{}", self.ty(c, &body["type"]))
            }
            "impl_trait" => format!("impl {}", self.bounds(c, body)),
            "dyn_trait" => {
                let mut parts: Vec<String> = body["traits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| self.path(c, &p["trait"]))
                    .collect();
                if let Some(lt) = body["lifetime"].as_str() {
                    parts.push(lt.to_owned());
                }
                format!("dyn {}", parts.join(" + "))
            }
            "function_pointer" => {
                let (inputs, output) = self.sig(c, &body["sig"]);
                format!("fn({}){output}", inputs.join(", "))
            }
            "qualified_path" => {
                let self_type = self.ty(c, &body["self_type"]);
                let name = body["name"].as_str().unwrap_or("?");
                match &body["trait"] {
                    Value::Null => format!("{self_type}::{name}"),
                    tr => format!("<{self_type} as {}>::{name}", self.path(c, tr)),
                }
            }
            other => format!("<{other}>"),
        }
    }

    /// A signature's parameters (`self` as written) and its ` -> output`.
    fn sig(&mut self, c: usize, sig: &Value) -> (Vec<String>, String) {
        let mut inputs = Vec::new();
        for input in sig["inputs"].as_array().into_iter().flatten() {
            let name = input[0].as_str().unwrap_or("_");
            let ty = self.ty(c, &input[1]);
            inputs.push(match (name, ty.as_str()) {
                ("_", _) => ty.clone(),
                ("self", "Self") => "self".to_owned(),
                ("self", "&Self") => "&self".to_owned(),
                ("self", "&mut Self") => "&mut self".to_owned(),
                _ => format!("{name}: {ty}"),
            });
        }
        let output = match &sig["output"] {
            Value::Null => String::new(),
            t => format!(" -> {}", self.ty(c, t)),
        };
        (inputs, output)
    }

    /// `<'a, T: Bound>` and ` where …` of an item's generics.
    fn generics(&mut self, c: usize, generics: &Value) -> (String, String) {
        let mut params = Vec::new();
        for param in generics["params"].as_array().into_iter().flatten() {
            let name = param["name"].as_str().unwrap_or("?");
            let kind = &param["kind"];
            if let Some(ty) = kind.get("type") {
                if ty["is_synthetic"] == true {
                    continue;
                }
                let bounds = self.bounds(c, &ty["bounds"]);
                params.push(if bounds.is_empty() {
                    name.to_owned()
                } else {
                    format!("{name}: {bounds}")
                });
            } else if let Some(lt) = kind.get("lifetime") {
                let outlives: Vec<&str> = lt["outlives"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                params.push(if outlives.is_empty() {
                    name.to_owned()
                } else {
                    format!("{name}: {}", outlives.join(" + "))
                });
            } else if let Some(cst) = kind.get("const") {
                params.push(format!("const {name}: {}", self.ty(c, &cst["type"])));
            }
        }
        let mut wheres = Vec::new();
        for predicate in generics["where_predicates"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(bp) = predicate.get("bound_predicate") {
                let ty = self.ty(c, &bp["type"]);
                wheres.push(format!("{ty}: {}", self.bounds(c, &bp["bounds"])));
            } else if let Some(eq) = predicate.get("eq_predicate") {
                let lhs = self.ty(c, &eq["lhs"]);
                let rhs = eq["rhs"].get("type").map(|t| self.ty(c, t));
                wheres.push(format!("{lhs} = {}", rhs.unwrap_or_default()));
            } else if let Some(lp) = predicate.get("lifetime_predicate") {
                wheres.push(lp["lifetime"].as_str().unwrap_or("'_").to_owned());
            }
        }
        let params = if params.is_empty() {
            String::new()
        } else {
            format!("<{}>", params.join(", "))
        };
        let wheres = if wheres.is_empty() {
            String::new()
        } else {
            format!(" where {}", wheres.join(", "))
        };
        (params, wheres)
    }

    fn function(&mut self, c: usize, path: &str, body: &Value) -> String {
        let header = &body["header"];
        let mut head = String::from("pub ");
        if header["is_const"] == true {
            head.push_str("const ");
        }
        if header["is_async"] == true {
            head.push_str("async ");
        }
        if header["is_unsafe"] == true {
            head.push_str("unsafe ");
        }
        let (params, wheres) = self.generics(c, &body["generics"]);
        let (inputs, output) = self.sig(c, &body["sig"]);
        format!(
            "{head}fn {path}{params}({}){output}{wheres}",
            inputs.join(", ")
        )
    }

    fn attributes(item: &Value) -> &'static str {
        let non_exhaustive = item["attrs"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a.get("non_exhaustive").is_some() || a == "non_exhaustive");
        if non_exhaustive {
            "#[non_exhaustive] "
        } else {
            ""
        }
    }

    /// The lines of one item named `path` (and, for a type, its parts).
    fn item(&mut self, (c, id): &ItemRef, path: &str, lines: &mut BTreeSet<String>) {
        let c = *c;
        let item = self.api.crates[c].item(id);
        let (kind, body) = inner(item);
        let attrs = Self::attributes(item);
        match kind {
            "module" => {
                lines.insert(format!("pub mod {path}"));
            }
            "function" => {
                let line = self.function(c, path, body);
                lines.insert(line);
            }
            "constant" => {
                let ty = self.ty(c, &body["type"]);
                lines.insert(format!("pub const {path}: {ty}"));
            }
            "static" => {
                let ty = self.ty(c, &body["type"]);
                lines.insert(format!("pub static {path}: {ty}"));
            }
            "type_alias" => {
                let (params, _) = self.generics(c, &body["generics"]);
                let ty = self.ty(c, &body["type"]);
                lines.insert(format!("pub type {path}{params} = {ty}"));
            }
            "macro" | "proc_macro" => {
                lines.insert(format!("pub macro {path}!"));
            }
            "trait" => {
                let (params, wheres) = self.generics(c, &body["generics"]);
                lines.insert(format!("pub trait {path}{params}{wheres}"));
                self.members(c, path, &body["items"], true, lines);
            }
            "struct" | "enum" | "union" => {
                let (params, wheres) = self.generics(c, &body["generics"]);
                let shape = match body["kind"].get("tuple") {
                    Some(fields) => {
                        let fields: Vec<String> = fields
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|f| match id_of(f) {
                                Some(f) => {
                                    let ty = &self.api.crates[c].item(&f)["inner"]["struct_field"];
                                    format!("pub {}", self.ty(c, ty))
                                }
                                None => "_".to_owned(),
                            })
                            .collect();
                        format!("({})", fields.join(", "))
                    }
                    None => String::new(),
                };
                lines.insert(format!("{attrs}pub {kind} {path}{params}{shape}{wheres}"));
                if let Some(fields) = body["kind"].get("plain") {
                    self.fields(c, path, &fields["fields"], lines);
                }
                if let Some(fields) = body.get("fields") {
                    self.fields(c, path, fields, lines);
                }
                for variant in body["variants"].as_array().into_iter().flatten() {
                    self.variant(c, path, variant, lines);
                }
                self.impls(c, path, &body["impls"], lines);
            }
            _ => {
                lines.insert(format!("pub {kind} {path}"));
            }
        }
    }

    fn fields(&mut self, c: usize, path: &str, fields: &Value, lines: &mut BTreeSet<String>) {
        for field in fields.as_array().into_iter().flatten().filter_map(id_of) {
            let field = self.api.crates[c].item(&field);
            if field["visibility"] != "public" && field["visibility"] != "default" {
                continue;
            }
            let name = field["name"].as_str().unwrap_or("?");
            let ty = self.ty(c, &field["inner"]["struct_field"]);
            lines.insert(format!("pub {path}::{name}: {ty}"));
        }
    }

    fn variant(&mut self, c: usize, path: &str, variant: &Value, lines: &mut BTreeSet<String>) {
        let Some(id) = id_of(variant) else { return };
        let variant = self.api.crates[c].item(&id);
        let name = variant["name"].as_str().unwrap_or("?");
        let attrs = Self::attributes(variant);
        let kind = &variant["inner"]["variant"]["kind"];
        let at = format!("{path}::{name}");
        if let Some(fields) = kind.get("tuple") {
            let fields: Vec<String> = fields
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| match id_of(f) {
                    Some(f) => {
                        let ty = &self.api.crates[c].item(&f)["inner"]["struct_field"];
                        self.ty(c, ty)
                    }
                    None => "_".to_owned(),
                })
                .collect();
            lines.insert(format!("{attrs}pub {at}({})", fields.join(", ")));
        } else if let Some(plain) = kind.get("struct") {
            lines.insert(format!("{attrs}pub {at} {{ .. }}"));
            self.fields(c, &at, &plain["fields"], lines);
        } else {
            lines.insert(format!("{attrs}pub {at}"));
        }
    }

    fn impls(&mut self, c: usize, path: &str, impls: &Value, lines: &mut BTreeSet<String>) {
        for id in impls.as_array().into_iter().flatten().filter_map(id_of) {
            let item = self.api.crates[c].item(&id);
            let body = &item["inner"]["impl"];
            if body["is_synthetic"] == true || !body["blanket_impl"].is_null() {
                continue;
            }
            match &body["trait"] {
                Value::Null => self.members(c, path, &body["items"], false, lines),
                tr => {
                    let (params, wheres) = self.generics(c, &body["generics"]);
                    let negative = if body["is_negative"] == true { "!" } else { "" };
                    let tr = self.path(c, tr);
                    let for_ = self.ty(c, &body["for"]);
                    lines.insert(format!("impl{params} {negative}{tr} for {for_}{wheres}"));
                }
            }
        }
    }

    /// An inherent impl's public items, or a trait's items.
    fn members(
        &mut self,
        c: usize,
        path: &str,
        items: &Value,
        all: bool,
        lines: &mut BTreeSet<String>,
    ) {
        for id in items.as_array().into_iter().flatten().filter_map(id_of) {
            let item = self.api.crates[c].item(&id);
            if !all && item["visibility"] != "public" {
                continue;
            }
            let name = item["name"].as_str().unwrap_or("?");
            let at = format!("{path}::{name}");
            let (kind, body) = inner(item);
            let line = match kind {
                "function" => self.function(c, &at, body),
                "assoc_const" => format!("pub const {at}: {}", self.ty(c, &body["type"])),
                "assoc_type" => format!("pub type {at}"),
                other => format!("pub {other} {at}"),
            };
            lines.insert(line);
        }
    }
}

/// The listing: one line per item, sorted; and the workspace types reachable from it that
/// the facade does not name.
fn listing(api: &Api) -> (String, BTreeSet<String>) {
    let mut renderer = Renderer::new(api);
    let mut lines = BTreeSet::new();
    for (path, export) in &api.exports {
        match export {
            Export::Foreign(source) => {
                lines.insert(format!("pub use {path} = {source}"));
            }
            Export::Item(item) => {
                let definition = api.definition(item.0, &item.1).unwrap_or_default();
                match renderer.names.get(&definition) {
                    Some(primary) if primary != path => {
                        lines.insert(format!("pub use {path} = {primary}"));
                    }
                    _ => renderer.item(item, path, &mut lines),
                }
            }
        }
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    (text, renderer.unnameable)
}

/// What is only in `old` (`-`) and only in `new` (`+`): both are sorted sets of lines.
fn difference(old: &str, new: &str) -> String {
    let old: BTreeSet<&str> = old.lines().collect();
    let new: BTreeSet<&str> = new.lines().collect();
    let mut out = String::new();
    for line in old.difference(&new) {
        out.push_str(&format!("- {line}\n"));
    }
    for line in new.difference(&old) {
        out.push_str(&format!("+ {line}\n"));
    }
    out
}

#[test]
fn the_public_api_is_the_committed_listing_and_every_reachable_type_is_nameable() {
    let api = Api::load(&rustdoc_json());
    let (generated, unnameable) = listing(&api);
    assert!(
        generated.lines().count() > 200,
        "only {} lines generated: did the reader lose the facade?",
        generated.lines().count()
    );
    assert!(
        unnameable.is_empty(),
        "types reachable from the facade's API that it does not name (re-export them from \
         src/lib.rs, or keep them out of the API): {unnameable:#?}"
    );
    let file = root().join(LISTING);
    if std::env::var_os(UPDATE_ENV).is_some() {
        std::fs::write(&file, &generated).expect("write the listing");
        return;
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    let diff = difference(&committed, &generated);
    assert!(
        diff.is_empty(),
        "the public API differs from {LISTING} (- committed, + now):\n{diff}\n\
         If the change is meant, update the listing with `{UPDATE_COMMAND}` and commit it."
    );
}
