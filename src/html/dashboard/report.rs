//! Reading the JSON reports into columns: everything a column shows comes from its report (its
//! expectations' causes included), and its case pages' folder is linked relative to the page.

use std::collections::BTreeSet;
use std::path::{Component, Path};

use serde_json::Value;

use super::{Case, CauseView, Column, DashboardError, Expectations, ReportInput};

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item.as_str().map(str::to_string))
        .collect()
}

fn pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| {
            Some((
                pair["scenario"].as_str()?.to_string(),
                pair["rule"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Reads one JSON report; everything it shows comes from the report (its expectations'
/// causes included), so the command reads the same from any folder.
pub fn load(input: &ReportInput) -> Result<Column, DashboardError> {
    let fail = |message: String| DashboardError {
        file: input.report.display().to_string(),
        message,
    };
    // Only a regular file is read: a FIFO nobody writes would block, a device never end.
    let kind = std::fs::metadata(&input.report)
        .map_err(|error| fail(format!("cannot read: {error}")))?
        .file_type();
    if !kind.is_file() {
        return Err(fail(format!(
            "not a regular file but {}: a report is a file `agentsim run --format json` wrote",
            crate::scenario::kind_of(&kind)
        )));
    }
    let text = std::fs::read_to_string(&input.report).map_err(|error| fail(format!("cannot read: {error}")))?;
    parse_report(input, &text)
}

/// A column of the dashboard from the text of a JSON report (`input` names the file and the
/// pages' folder): the report's implementation and its cases, or what is wrong with it.
pub fn parse_report(input: &ReportInput, text: &str) -> Result<Column, DashboardError> {
    let file = input.report.display().to_string();
    let fail = |message: String| DashboardError {
        file: file.clone(),
        message,
    };
    let value: Value = serde_json::from_str(text).map_err(|error| fail(format!("not a JSON report: {error}")))?;
    let implementation = value["implementation"]
        .as_str()
        .ok_or_else(|| fail("no `implementation`: write it with `agentsim run --format json`".into()))?
        .to_string();
    let results = value["results"]
        .as_array()
        .ok_or_else(|| fail("no `results` array".into()))?;
    let mut cases = Vec::new();
    for (index, result) in results.iter().enumerate() {
        let name = result["name"]
            .as_str()
            .ok_or_else(|| fail(format!("results[{index}].name is missing")))?;
        let status = result["status"]
            .as_str()
            .ok_or_else(|| fail(format!("results[{index}].status is missing")))?;
        let violations = result["violations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|violation| {
                Some((
                    violation["rule"].as_str()?.to_string(),
                    violation["message"].as_str().unwrap_or_default().to_string(),
                ))
            })
            .collect();
        cases.push(Case {
            name: name.to_string(),
            status: status.to_string(),
            must: result["must"].as_str().map(str::to_string),
            violations,
            // A broken case by its verdict code only: how an adapter died (its last effect, its
            // stderr) is the report's and the case page's to show, and may vary where the
            // verdict does not (a crash point that moves), which a page compared on must not.
            detail: match (status, result["code"].as_str()) {
                ("broken", Some(code)) => Some(format!("broken: {code} (the report and the case's replay say how)")),
                _ => result["detail"].as_str().map(str::to_string),
            },
            path: result["path"].as_str().unwrap_or_default().to_string(),
            replay: result["replay"].as_str().unwrap_or_default().to_string(),
            named: strings(&result["rules"]),
            exercised: result.get("exercised").map(strings),
        });
    }
    let expectations = value
        .get("expectations")
        .filter(|value| value.is_object())
        .map(|expected| {
            let file = expected["file"]
                .as_str()
                .map(|path| {
                    Path::new(path)
                        .file_name()
                        .map_or(path.to_string(), |name| name.to_string_lossy().into_owned())
                })
                .unwrap_or_default();
            let causes = expected["causes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|cause| CauseView {
                    id: cause["id"].as_str().unwrap_or_default().to_string(),
                    verdict: cause["verdict"].as_str().unwrap_or("-").to_string(),
                    reason: cause["reason"].as_str().unwrap_or_default().to_string(),
                    source: cause["source"]["file"].as_str().map(|source| {
                        (
                            format!("{source}:{}", cause["source"]["line"].as_u64().unwrap_or(0)),
                            cause["source"]["function"].as_str().unwrap_or_default().to_string(),
                        )
                    }),
                    listed: cause["listed"].as_u64().unwrap_or(0) as usize,
                    confirmed: pairs(&cause["confirmed"]),
                    stale: pairs(&cause["stale"]),
                    unjudged: pairs(&cause["unjudged"]),
                    explored: pairs(&cause["explored"]),
                })
                .collect();
            Expectations {
                file,
                causes,
                unexpected: pairs(&expected["unexpected"]),
            }
        });
    Ok(Column {
        implementation,
        cases,
        expectations,
        pages: input.pages.clone(),
        pages_href: None,
    })
}

/// Links each column's pages folder relative to the folder the HTML page is written to, so the
/// links resolve wherever the command ran. Names the folder that does not exist.
pub fn link_pages(columns: &mut [Column], page_folder: &Path) -> Result<(), DashboardError> {
    let base = std::fs::canonicalize(page_folder).map_err(|error| DashboardError {
        file: page_folder.display().to_string(),
        message: format!("the page's folder: {error}"),
    })?;
    for column in columns {
        if let Some(pages) = &column.pages {
            let folder = std::fs::canonicalize(pages).map_err(|error| DashboardError {
                file: pages.display().to_string(),
                message: format!("the case pages' folder: {error}"),
            })?;
            column.pages_href = Some(relative(&base, &folder));
        }
    }
    Ok(())
}

/// `to` relative to `from`, both absolute: `../pages`, `./pages`, `.`; `/` separators. Never a
/// bare first component, which a browser could read as a URL scheme (`javascript:`).
fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    if parts.is_empty() {
        parts.push(".".to_string());
    }
    parts.extend(
        to[common..]
            .iter()
            .map(|part| part.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_between_folders() {
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b/pages")), "./pages");
        assert_eq!(
            relative(Path::new("/a"), Path::new("/a/javascript:x")),
            "./javascript:x"
        );
        assert_eq!(relative(Path::new("/a/b/out"), Path::new("/a/b/pages")), "../pages");
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b")), ".");
        assert_eq!(relative(Path::new("/x/y"), Path::new("/a")), "../../a");
    }
}
