//! Atomic file writes: write a temporary file beside the target, then rename it over the
//! target, so that a crash or error never leaves a half-written file behind.

use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path` through a `.NAME.tmp-XXXXXX` file in the same folder (same file
/// system, so the rename is atomic), synced before it is renamed over `path`. On any error the
/// temporary file is removed (`NamedTempFile` deletes itself when dropped unpersisted). The
/// file gets the permissions `File::create` would give (0666 less the umask), not tempfile's
/// private 0600, so outputs stay readable as before.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.tmp-");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut f = b.tempfile_in(dir)?;
    f.write_all(bytes)?;
    f.as_file().sync_all()?;
    f.persist(path).map(drop).map_err(|e| e.error)
}

/// Rewrite an existing file atomically, keeping what it is: through a symlink the file it
/// points to is rewritten (the link stays a link), and its permission bits stay as they were
/// (`fmt --write`).
pub fn rewrite(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let perms = std::fs::metadata(&target)?.permissions();
    write_atomic(&target, bytes)?;
    std::fs::set_permissions(&target, perms)
}

/// The manifest a run leaves in its output folder: the names of exactly the files it wrote,
/// one per line, written after all of them (a folder without one, or whose files are not all
/// there, holds an incomplete run).
pub const MANIFEST: &str = ".orrery-files";

/// Make `dir` hold this run's files only: remove the files an earlier run listed in its
/// manifest that this run did not write, and the temporary files a killed writer left
/// ([`write_atomic`]'s `.NAME.tmp-XXXXXX`, six random characters); then write this run's
/// manifest. Only regular files directly in `dir` are removed, never a folder or a link.
pub fn own_folder(dir: &Path, written: &[String]) -> std::io::Result<()> {
    let plain =
        |n: &str| !n.is_empty() && !n.starts_with('.') && !n.contains('/') && !n.contains('\\');
    let keep: std::collections::BTreeSet<&str> = written
        .iter()
        .map(String::as_str)
        .filter(|n| plain(n))
        .collect();
    if let Ok(old) = crate::files::read_text(&dir.join(MANIFEST), crate::files::MAX_INPUT_BYTES) {
        for name in old
            .lines()
            .map(str::trim)
            .filter(|n| plain(n) && !keep.contains(n))
        {
            let p = dir.join(name);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(&p)?;
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let stale = name
                .strip_prefix('.')
                .and_then(|r| r.rsplit_once(".tmp-"))
                .is_some_and(|(n, random)| {
                    !n.is_empty()
                        && random.len() == 6
                        && random.bytes().all(|b| b.is_ascii_alphanumeric())
                });
            if stale && e.file_type().is_ok_and(|t| t.is_file()) {
                std::fs::remove_file(e.path())?;
            }
        }
    }
    let mut text = String::new();
    for n in &keep {
        text.push_str(n);
        text.push('\n');
    }
    write_atomic(&dir.join(MANIFEST), text.as_bytes())
}

/// Create an output folder (and its parents) if missing: with [`write_atomic`], the only way
/// the library writes to the file system.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Create `dir` and write each (name, text) into it atomically, in order; the names written.
pub fn write_files<N: AsRef<str>, T: AsRef<str>>(
    dir: &Path,
    files: impl IntoIterator<Item = (N, T)>,
) -> std::io::Result<Vec<String>> {
    create_dir(dir)?;
    let mut out = Vec::new();
    for (name, text) in files {
        write_atomic(&dir.join(name.as_ref()), text.as_ref().as_bytes())?;
        out.push(name.as_ref().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("orrery-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.txt");
        super::write_atomic(&p, b"first").unwrap();
        super::write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp-")
            })
            .count();
        assert_eq!(leftovers, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn temps_in(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                n.to_string_lossy().contains(".tmp-")
            })
            .count()
    }

    #[test]
    fn a_failed_rename_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("orrery-atomic-fail-{}", std::process::id()));
        // The target is a non-empty folder: the temporary file cannot be renamed over it.
        std::fs::create_dir_all(dir.join("target").join("inside")).unwrap();
        assert!(super::write_atomic(&dir.join("target"), b"x").is_err());
        assert_eq!(temps_in(&dir), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn written_files_get_the_permissions_of_file_create() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("orrery-atomic-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::File::create(dir.join("plain")).unwrap();
        super::write_atomic(&dir.join("atomic"), b"x").unwrap();
        let mode = |n: &str| std::fs::metadata(dir.join(n)).unwrap().permissions().mode();
        assert_eq!(mode("atomic"), mode("plain"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
