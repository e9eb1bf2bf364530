//! Reading the files a user names (scenarios, includes, profiles, traces, samples, shards):
//! each is opened once, must be a regular file (a FIFO, device or folder is refused before a
//! byte is read: it is opened non-blocking and checked on the open handle), is read with its
//! size limit enforced while reading (never more than the limit plus one byte), and must be
//! UTF-8. [`read_confined`] also resolves symlinks and refuses a file outside the folder it
//! must live in, without reading it.
//!
//! Architecture invariant: the only place user-named input files are opened (the machine's
//! own /proc and /sys are `calibrate::sysfs`'s; outputs are `atomic`'s).

use std::io::Read;
use std::path::{Path, PathBuf};

/// The limit of every text input: scenarios, includes, profiles, traces, samples, benchmark
/// outputs.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// The limit of a sweep shard (`merge`): a shard holds one row per run, up to 100,000 seeds
/// per cell.
pub const MAX_SHARD_BYTES: u64 = 256 << 20;

/// Why a file was not read, in words that follow its name (`p.orr is not a regular file`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// Not found, permission, ...: the system's message.
    Io(String),
    /// A FIFO, socket, device or folder.
    NotRegular(&'static str),
    TooLarge(u64),
    NotUtf8(usize),
    /// Resolves outside the folder (the folder shown).
    Outside(PathBuf),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot be read: {e}"),
            ReadError::NotRegular(k) => write!(f, "is not a regular file (a {k})"),
            ReadError::TooLarge(l) => write!(f, "is larger than the {} MiB limit", l >> 20),
            ReadError::NotUtf8(at) => write!(f, "is not UTF-8 text (invalid byte at offset {at})"),
            ReadError::Outside(root) => write!(
                f,
                "resolves outside the folder it must be in ({})",
                root.display()
            ),
        }
    }
}

/// What a file is, in words that follow "a" (`a FIFO`): for refusals, here and in
/// [`crate::atomic`].
pub(crate) fn kind(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() {
        "regular file"
    } else if ft.is_symlink() {
        "symbolic link"
    } else if ft.is_dir() {
        "folder"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

/// The bytes of a regular file, at most `limit` of them.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_with_meta(path, limit).map(|(b, _)| b)
}

/// The text of a regular UTF-8 file of at most `limit` bytes and its metadata (from the same
/// open handle: the file read is the file described).
pub fn read_text_meta(path: &Path, limit: u64) -> Result<(String, std::fs::Metadata), ReadError> {
    let (b, m) = read_with_meta(path, limit)?;
    let t = String::from_utf8(b).map_err(|e| ReadError::NotUtf8(e.utf8_error().valid_up_to()))?;
    Ok((t, m))
}

fn read_with_meta(path: &Path, limit: u64) -> Result<(Vec<u8>, std::fs::Metadata), ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| ReadError::Io(e.to_string()))?;
    let meta = f.metadata().map_err(|e| ReadError::Io(e.to_string()))?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind(meta.file_type())));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge(limit));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Io(e.to_string()))?;
    // The file may have grown since its size was read.
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok((bytes, meta))
}

/// The text of a regular UTF-8 file of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, limit)?)
        .map_err(|e| ReadError::NotUtf8(e.utf8_error().valid_up_to()))
}

/// `name` under `dir`, symlinks resolved, refused unless it resolves inside `root` (which
/// defaults to `dir`); the resolved path and its text.
pub fn read_confined(
    dir: &Path,
    name: &Path,
    root: Option<&Path>,
    limit: u64,
) -> Result<(PathBuf, String), ReadError> {
    let root = root
        .unwrap_or(dir)
        .canonicalize()
        .map_err(|e| ReadError::Io(e.to_string()))?;
    let canon = dir
        .join(name)
        .canonicalize()
        .map_err(|e| ReadError::Io(e.to_string()))?;
    if !canon.starts_with(&root) {
        return Err(ReadError::Outside(root));
    }
    let text = read_text(&canon, limit)?;
    Ok((canon, text))
}

/// `dir` itself, symlinks resolved, refused unless it resolves inside `root`: for a folder whose
/// files are then read confined to it (a profile's `calibration/` folder), so that the folder
/// cannot be a link to somewhere else.
pub fn confined_dir(dir: &Path, root: &Path) -> Result<PathBuf, ReadError> {
    let root = root
        .canonicalize()
        .map_err(|e| ReadError::Io(e.to_string()))?;
    let canon = dir
        .canonicalize()
        .map_err(|e| ReadError::Io(e.to_string()))?;
    if !canon.starts_with(&root) {
        return Err(ReadError::Outside(root));
    }
    Ok(canon)
}

/// 1-based line and column (in characters) of byte offset `at` of `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_small_regular_file_inside_its_folder() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a.txt");
        std::fs::write(&f, "hello").unwrap();
        assert_eq!(read_text(&f, 5).unwrap(), "hello");
        assert_eq!(read_text(&f, 4), Err(ReadError::TooLarge(4)));
        assert!(matches!(
            read_text(d.path(), 100),
            Err(ReadError::NotRegular("folder"))
        ));
        assert!(matches!(
            read_text(Path::new("/dev/zero"), 100),
            Err(ReadError::NotRegular("device"))
        ));
        let fifo = d.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(matches!(
            read_text(&fifo, 100),
            Err(ReadError::NotRegular("FIFO"))
        ));
        std::fs::write(d.path().join("b.txt"), [0xff, 0xfe]).unwrap();
        assert_eq!(
            read_text(&d.path().join("b.txt"), 100),
            Err(ReadError::NotUtf8(0))
        );
        let inner = d.path().join("in");
        std::fs::create_dir(&inner).unwrap();
        std::os::unix::fs::symlink("../a.txt", inner.join("link")).unwrap();
        assert!(matches!(
            read_confined(&inner, Path::new("link"), None, 100),
            Err(ReadError::Outside(_))
        ));
        assert_eq!(
            read_confined(&inner, Path::new("link"), Some(d.path()), 100)
                .unwrap()
                .1,
            "hello"
        );
    }
}
