//! The results of commands with nothing to plot (`import`, `counters`, `arch list`, `calibrate`, `collect
//! --suite`, …): their fields as tables, so that every command's `--format json` has a place in a report.
//! Scalars (also those of nested objects, as `a.b`) make one two-column table; each list of objects makes
//! a table of its own, one row per object and one column per scalar field.

use serde_json::Value;

/// Rows shown of one list, and scalar fields of one object shown as columns.
const MAX_ROWS: usize = 200;
const MAX_COLUMNS: usize = 12;

/// One table of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldTable {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Rows of the list not shown (beyond [`MAX_ROWS`]).
    pub more_rows: usize,
}

/// A JSON scalar as text (`null` as empty), or `None` for an array or object.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some(String::new()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// A list of scalars as one cell.
fn joined(items: &[Value]) -> Option<String> {
    items.iter().map(scalar).collect::<Option<Vec<_>>>().map(|v| v.join(", "))
}

/// The tables of result `v` (its envelope fields left out).
pub fn tables(v: &Value) -> Vec<FieldTable> {
    let mut fields = Vec::new();
    let mut lists = Vec::new();
    walk("", v, &mut fields, &mut lists);
    let mut out = Vec::new();
    if !fields.is_empty() {
        out.push(FieldTable {
            title: "fields".into(),
            header: vec!["field".into(), "value".into()],
            rows: fields.into_iter().map(|(k, v)| vec![k, v]).collect(),
            more_rows: 0,
        });
    }
    out.extend(lists);
    out
}

fn walk(prefix: &str, v: &Value, fields: &mut Vec<(String, String)>, lists: &mut Vec<FieldTable>) {
    let Some(obj) = v.as_object() else { return };
    for (k, x) in obj {
        if prefix.is_empty() && (k == "command" || k == "format_version") {
            continue;
        }
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match x {
            Value::Object(_) => walk(&key, x, fields, lists),
            Value::Array(items) => match joined(items) {
                Some(text) => fields.push((key, text)),
                None => lists.push(list_table(&key, items)),
            },
            _ => fields.push((key, scalar(x).unwrap_or_default())),
        }
    }
}

/// A list of objects: one row per object, one column per scalar (or list-of-scalars) field.
fn list_table(key: &str, items: &[Value]) -> FieldTable {
    let mut header: Vec<String> = Vec::new();
    for item in items {
        for (k, x) in item.as_object().into_iter().flatten() {
            let shown = scalar(x).is_some() || x.as_array().is_some_and(|a| joined(a).is_some());
            if shown && !header.contains(k) && header.len() < MAX_COLUMNS {
                header.push(k.clone());
            }
        }
    }
    let rows = items
        .iter()
        .take(MAX_ROWS)
        .map(|item| {
            header
                .iter()
                .map(|h| match item.get(h) {
                    Some(Value::Array(a)) => joined(a).unwrap_or_default(),
                    Some(x) => scalar(x).unwrap_or_default(),
                    None => scalar(item).unwrap_or_default(),
                })
                .collect()
        })
        .collect();
    FieldTable { title: key.to_string(), header, rows, more_rows: items.len().saturating_sub(MAX_ROWS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_nested_fields_and_lists_of_objects_become_tables() {
        let v: Value = serde_json::json!({
            "command": "counters", "format_version": 1, "chip": "GH100", "pm_passes": null,
            "limits": {"rate_hz": 60, "names": ["a", "b"]},
            "inputs": [{"name": "SP", "counters": ["x", "y"], "nested": {"z": 1}}, {"name": "DRAM", "passes": 2}]
        });
        let t = tables(&v);
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[0].rows,
            [
                vec!["chip".to_string(), "GH100".into()],
                vec!["limits.names".into(), "a, b".into()],
                vec!["limits.rate_hz".into(), "60".into()],
                vec!["pm_passes".into(), String::new()],
            ]
        );
        assert_eq!(
            (t[1].title.as_str(), t[1].header.clone()),
            ("inputs", vec!["counters".into(), "name".into(), "passes".into()])
        );
        // Columns in the JSON object's key order (sorted).
        assert_eq!(t[1].rows[0], ["x, y", "SP", ""]);
        assert_eq!(t[1].rows[1], ["", "DRAM", "2"]);
    }
}
