//! A producer or consumer command (`write -- COMMAND`, `read -- COMMAND`) checked before any
//! connection, so a typo or a file name fails at once with what to do instead of after the
//! peer arrived: `httpipe write notes.txt` means `httpipe send notes.txt`.

use std::path::{Path, PathBuf};

use crate::exit::{CliError, Role};

/// Ok when `argv[0]` is a program that can be started; else a usage error saying what to
/// run instead (`send FILE` for a file given to `write`, `> FILE` for one given to `read`).
pub fn check(argv: &[String], role: Role) -> Result<(), CliError> {
    let Some(prog) = argv.first() else {
        return Err(CliError::usage("empty command", "give a command after --"));
    };
    if find_program(prog).is_some() {
        return Ok(());
    }
    let is_file = Path::new(prog).is_file();
    let (sub, instead) = match role {
        Role::Producer => (
            "write",
            format!(
                "to send a file, use `httpipe send {prog}` (or `httpipe write ... < {prog}`); \
                 `write` runs COMMAND and sends its output"
            ),
        ),
        Role::Consumer => (
            "read",
            format!(
                "to save the stream in a file, use `httpipe read ... > {prog}` (or `httpipe \
                 receive -o {prog}`); `read` runs COMMAND with the stream as its stdin"
            ),
        ),
    };
    let what = if is_file {
        format!("`httpipe {sub} {prog}`: {prog} is a file, not a command")
    } else {
        format!("can't start command `{prog}`: not found (nor executable) on PATH")
    };
    let fix = if is_file {
        instead
    } else {
        format!("check the command name and PATH; {instead}")
    };
    Err(CliError::usage(what, fix))
}

/// Where `prog` would be started from: itself when it names a path (has a `/`), else the
/// first executable file of that name on `PATH`.
fn find_program(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| executable(p))
}

fn executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn programs_on_path_and_by_path_pass() {
        assert!(check(&argv(&["sh", "-c", "true"]), Role::Producer).is_ok());
        assert!(check(&argv(&["/bin/sh"]), Role::Consumer).is_ok());
    }

    #[test]
    fn a_file_given_to_write_or_read_says_send_or_redirect() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "hi").expect("write");
        let f = file.display().to_string();
        let e = check(&argv(&[&f]), Role::Producer).expect_err("a file");
        assert_eq!(e.exit, crate::exit::Exit::Usage);
        assert!(e.what.contains("is a file, not a command"), "{e}");
        assert!(e.fix.contains(&format!("httpipe send {f}")), "{e}");
        let e = check(&argv(&[&f]), Role::Consumer).expect_err("a file");
        assert!(e.fix.contains(&format!("> {f}")), "{e}");
    }

    #[test]
    fn an_unknown_command_names_it_and_the_alternatives() {
        let e = check(&argv(&["no-such-command-x9"]), Role::Producer).expect_err("unknown");
        assert!(e.what.contains("`no-such-command-x9`"), "{e}");
        assert!(
            e.fix.contains("PATH") && e.fix.contains("httpipe send"),
            "{e}"
        );
        assert!(check(&[], Role::Producer).is_err());
    }
}
