//! The steps of a page that CI runs (docs/quickstart-filecoin.md): its fenced code blocks, each
//! marked in its info string with what the test does with it (```` ```sh e2e:run ````). A
//! block without a mark is an error, so a command added to the page cannot go untested.

use std::fmt;

/// What the test does with a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepMode {
    /// Run as written, under bash.
    Run,
    /// A manifest, applied as written.
    Apply,
    /// Helm values, rendered and applied by scripts/chart-check.sh.
    Values,
    /// A part the test plays itself (its comment says how).
    Played,
}

/// One fenced block of the page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocStep {
    /// The block's language (`sh`, `yaml`).
    pub lang: String,
    pub mode: StepMode,
    /// The block's text, with its final newline.
    pub text: String,
    /// The line of the opening fence (1-based), for messages.
    pub line: usize,
}

impl fmt::Display for DocStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self
            .text
            .lines()
            .find(|l| !l.starts_with('#'))
            .unwrap_or("");
        write!(
            f,
            "line {} ({} {:?}): {first}",
            self.line, self.lang, self.mode
        )
    }
}

/// The fenced blocks of `page`, in order; an error names every block without an `e2e:` mark
/// or with an unknown one, and a fence left open.
pub fn doc_steps(page: &str) -> Result<Vec<DocStep>, String> {
    let mut steps = Vec::new();
    let mut problems = Vec::new();
    let mut open: Option<(usize, String, Option<StepMode>)> = None;
    let mut text = String::new();
    for (index, line) in page.lines().enumerate() {
        let number = index + 1;
        match (&open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                let mut words = info.split_whitespace();
                let lang = words.next().unwrap_or("").to_owned();
                let marks: Vec<&str> = words.filter_map(|w| w.strip_prefix("e2e:")).collect();
                let mode = match marks.as_slice() {
                    ["run"] => Some(StepMode::Run),
                    ["apply"] => Some(StepMode::Apply),
                    ["values"] => Some(StepMode::Values),
                    ["played"] => Some(StepMode::Played),
                    other => {
                        problems.push(format!(
                            "line {number}: a fenced block needs one mark e2e:run, e2e:apply, \
                             e2e:values or e2e:played, has {other:?}"
                        ));
                        None
                    }
                };
                open = Some((number, lang, mode));
                text.clear();
            }
            (Some(_), Some("")) => {
                let (line, lang, mode) = open.take().expect("a block is open");
                if let Some(mode) = mode {
                    steps.push(DocStep {
                        lang,
                        mode,
                        text: std::mem::take(&mut text),
                        line,
                    });
                }
            }
            (Some(_), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    if let Some((line, ..)) = open {
        problems.push(format!("line {line}: the fenced block is never closed"));
    }
    if problems.is_empty() {
        Ok(steps)
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_blocks_are_steps_in_order() {
        let page = "# Title\n\ntext\n\n```sh e2e:run\necho one\necho two\n```\n\n\
                    ```yaml e2e:apply\nkind: X\n```\n```sh e2e:played\n# how\nhelm install\n```\n";
        let steps = doc_steps(page).unwrap();
        assert_eq!(
            steps
                .iter()
                .map(|s| (s.lang.as_str(), s.mode, s.text.as_str(), s.line))
                .collect::<Vec<_>>(),
            [
                ("sh", StepMode::Run, "echo one\necho two\n", 5),
                ("yaml", StepMode::Apply, "kind: X\n", 10),
                ("sh", StepMode::Played, "# how\nhelm install\n", 13),
            ]
        );
        assert_eq!(steps[2].to_string(), "line 13 (sh Played): helm install");
    }

    #[test]
    fn an_unmarked_or_unclosed_block_is_refused() {
        let err =
            doc_steps("```sh\nkubectl get pods\n```\n```sh e2e:walk\nx\n```\n```yaml e2e:values\n")
                .unwrap_err();
        assert!(
            err.contains("line 1: a fenced block needs one mark"),
            "{err}"
        );
        assert!(
            err.contains("line 4:") && err.contains("[\"walk\"]"),
            "{err}"
        );
        assert!(
            err.contains("line 7: the fenced block is never closed"),
            "{err}"
        );
    }
}
