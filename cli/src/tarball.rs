//! `httpipe send a b c`: several files go as one uncompressed ustar archive, streamed (the
//! size is known up front, so the receiver sees a percentage).

use std::path::{Path, PathBuf};

use crate::exit::CliError;

/// One file in the archive.
pub struct Entry {
    pub path: PathBuf,
    pub name: String,
    pub size: u64,
    pub mode: u32,
    pub mtime: u64,
}

/// The archive's exact size: headers, data padded to 512, two zero blocks.
pub fn archive_size(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .map(|e| 512 + e.size.div_ceil(512) * 512)
        .sum::<u64>()
        + 1024
}

/// Zero bytes after `size` bytes of data, to the next 512.
pub fn padding(size: u64) -> usize {
    ((512 - size % 512) % 512) as usize
}

fn octal(field: &mut [u8], value: u64) -> Result<(), ()> {
    let digits = field.len() - 1;
    let s = format!("{value:0digits$o}");
    if s.len() > digits {
        return Err(());
    }
    field[..digits].copy_from_slice(s.as_bytes());
    field[digits] = 0;
    Ok(())
}

/// A ustar header block for a regular file.
pub fn header(e: &Entry) -> Result<[u8; 512], CliError> {
    let mut h = [0u8; 512];
    let name = e.name.as_bytes();
    if name.is_empty() || name.len() > 100 {
        return Err(CliError::usage(
            format!(
                "file name {:?} is too long for the archive (max 100 bytes)",
                e.name
            ),
            "rename it, or tar the files yourself and use `httpipe write`",
        ));
    }
    h[..name.len()].copy_from_slice(name);
    let bad = |_| {
        CliError::usage(
            format!("{} is too large for a ustar archive", e.name),
            "send it alone",
        )
    };
    octal(&mut h[100..108], u64::from(e.mode & 0o7777)).map_err(bad)?;
    octal(&mut h[108..116], 0).map_err(bad)?;
    octal(&mut h[116..124], 0).map_err(bad)?;
    if octal(&mut h[124..136], e.size).is_err() {
        // GNU base-256 for sizes ≥ 8 GiB.
        h[124] = 0x80;
        h[128..136].copy_from_slice(&e.size.to_be_bytes());
    }
    octal(&mut h[136..148], e.mtime).map_err(bad)?;
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    Ok(h)
}

/// Checks the files and makes the entries (regular files only, distinct base names).
pub fn entries(paths: &[PathBuf]) -> Result<Vec<Entry>, CliError> {
    let mut out: Vec<Entry> = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| {
            CliError::usage(format!("can't open {}: {e}", p.display()), "check the path")
        })?;
        if !meta.is_file() {
            return Err(CliError::usage(
                format!("{} is not a regular file", p.display()),
                "send files; for a directory: tar c DIR | httpipe write -s /PATH",
            ));
        }
        let name = base_name(p)?;
        if out.iter().any(|e| e.name == name) {
            return Err(CliError::usage(
                format!("two files are named {name:?}"),
                "rename one",
            ));
        }
        #[cfg(unix)]
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
        #[cfg(not(unix))]
        let mode = 0o644;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        out.push(Entry {
            path: p.clone(),
            name,
            size: meta.len(),
            mode,
            mtime,
        });
    }
    Ok(out)
}

pub fn base_name(p: &Path) -> Result<String, CliError> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| {
            CliError::usage(
                format!("{} has no usable file name", p.display()),
                "rename it",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_valid_ustar() {
        let e = Entry {
            path: "a.txt".into(),
            name: "a.txt".into(),
            size: 5,
            mode: 0o100644,
            mtime: 0,
        };
        let h = header(&e).expect("header");
        assert_eq!(&h[..5], b"a.txt");
        assert_eq!(&h[124..136], b"00000000005\0");
        assert_eq!(&h[257..263], b"ustar\0");
        // checksum: sum with the field as spaces
        let mut c = h;
        c[148..156].copy_from_slice(b"        ");
        let sum: u32 = c.iter().map(|&b| u32::from(b)).sum();
        let field = std::str::from_utf8(&h[148..154]).expect("ascii");
        assert_eq!(u32::from_str_radix(field, 8).expect("octal"), sum);
        assert_eq!(archive_size(&[e]), 512 + 512 + 1024);
        assert_eq!(padding(5), 507);
        assert_eq!(padding(512), 0);
    }

    #[test]
    fn tar_reads_our_archive() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.txt");
        let b = dir.path().join("b.bin");
        std::fs::write(&a, b"hello").expect("write");
        std::fs::write(&b, vec![1u8; 1000]).expect("write");
        let es = entries(&[a, b]).expect("entries");
        let mut out = Vec::new();
        for e in &es {
            out.extend_from_slice(&header(e).expect("header"));
            out.extend(std::fs::read(&e.path).expect("read"));
            out.extend(vec![0u8; padding(e.size)]);
        }
        out.extend([0u8; 1024]);
        assert_eq!(out.len() as u64, archive_size(&es));
        let tarfile = dir.path().join("x.tar");
        std::fs::write(&tarfile, &out).expect("write");
        let Ok(o) = std::process::Command::new("tar")
            .arg("tf")
            .arg(&tarfile)
            .output()
        else {
            return; // no tar here
        };
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "a.txt\nb.bin\n");
    }
}
