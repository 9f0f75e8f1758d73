//! The pages on disk: which cases of a run (`run --html-dir`) or schedules of an exploration
//! (`explore --html-dir`) get a page, their file names, and the index linking them; each page
//! written whole or not at all.

use std::io;
use std::path::{Path, PathBuf};

use super::{escape, render_page, STYLE};
use crate::explore::ExploreSummary;
use crate::implementation::Implementation;
use crate::run::{CaseReport, Run, Verdict};
use crate::scenario::LoadedScenario;
use crate::trace::Trace;

/// Explore writes pages for at most this many failing schedules (the first ones).
pub const EXPLORE_PAGES_MAX: usize = 50;

/// The file name of a case's page: the scenario name with `/` as `-`, and `suffix`.
pub fn page_name(report: &CaseReport, suffix: &str) -> String {
    page_file_name(&report.name, suffix)
}

/// The page file name of the case named `name`: its characters outside `[A-Za-z0-9._-]` as
/// `-`, so a name never leaves the folder it is written to.
pub fn page_file_name(name: &str, suffix: &str) -> String {
    let stem: String = name
        .chars()
        .map(|character| match character {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => character,
            _ => '-',
        })
        .collect();
    format!("{stem}{suffix}.html")
}

/// The reference's trace fed the same inputs as an `--impl` case (`crate::oracle::replay`, up
/// to the first difference), for the page's divergence view; without the case's trace, the
/// reference's run under the same strategy and seed.
pub fn reference_trace(loaded: &LoadedScenario, report: &CaseReport) -> Option<Trace> {
    if !report.run.implementation.is_adapter() {
        return None;
    }
    if let Some(outcome) = &report.outcome {
        let mut subject = crate::sim::reference::ReferenceSubject::new();
        let replayed = crate::oracle::replay(
            &loaded.scenario,
            &outcome.trace,
            &mut subject,
            crate::oracle::Freedoms::ALL,
        );
        return Some(replayed.trace);
    }
    let reference = Run {
        implementation: Implementation::reference(),
        after: None,
        ..report.run.clone()
    };
    reference.execute(loaded).outcome.map(|outcome| outcome.trace)
}

/// Writes one case's page to `path`, whole or not at all.
pub fn write_page(path: &Path, loaded: &LoadedScenario, report: &CaseReport) -> io::Result<()> {
    let reference = reference_trace(loaded, report);
    crate::whole_file::write(path, render_page(&loaded.scenario, report, reference.as_ref()))
}

fn is_failure(report: &CaseReport) -> bool {
    !matches!(report.verdict, Verdict::Passed | Verdict::NotApplicable { .. })
}

/// `run --html-dir DIR`: one page per failing case, and `index.html` linking them. Returns the
/// pages written.
pub fn write_run_pages(dir: &Path, corpus: &[LoadedScenario], reports: &[CaseReport]) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut index = Vec::new();
    for report in reports.iter().filter(|report| is_failure(report)) {
        let Some(loaded) = corpus.iter().find(|loaded| loaded.name == report.name) else {
            continue;
        };
        let name = page_name(report, "");
        let path = dir.join(&name);
        write_page(&path, loaded, report)?;
        index.push((name, report.name.clone(), report.status().to_string()));
        written.push(path);
    }
    crate::whole_file::write(&dir.join("index.html"), index_page(&index))?;
    Ok(written)
}

/// `explore --html-dir DIR`: a page for each of the first [`EXPLORE_PAGES_MAX`] failing
/// schedules, re-run to get its trace by the choice sequence it took (an adapter's with the
/// divergence from the reference).
pub fn write_explore_pages(
    dir: &Path,
    corpus: &[LoadedScenario],
    summary: &ExploreSummary,
) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut index = Vec::new();
    for (number, failure) in summary.failures.iter().take(EXPLORE_PAGES_MAX).enumerate() {
        let Some(loaded) = corpus.iter().find(|loaded| loaded.name == failure.scenario) else {
            continue;
        };
        let run = match &failure.choices {
            Some(choices) => failure.run.clone().choosing(choices.clone()),
            None => failure.run.clone(),
        };
        let report = run.execute(loaded);
        let name = page_name(&report, &format!(".{}", number + 1));
        let path = dir.join(&name);
        write_page(&path, loaded, &report)?;
        index.push((name, failure.origin.clone(), report.status().to_string()));
        written.push(path);
    }
    crate::whole_file::write(&dir.join("index.html"), index_page(&index))?;
    Ok(written)
}

fn index_page(pages: &[(String, String, String)]) -> String {
    let mut items = String::new();
    for (file, name, status) in pages {
        items.push_str(&format!(
            "<li><a href=\"{}\">{}</a> <span class=\"verdict {status}\">{status}</span></li>\n",
            escape(file),
            escape(name)
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>agentsim: failing cases</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>Failing cases ({})</h1>\n<ul id=\"pages\">\n{items}</ul>\n</body>\n</html>\n",
        pages.len()
    )
}
