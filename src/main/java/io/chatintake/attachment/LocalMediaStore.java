package io.chatintake.attachment;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Downloaded files under {@code <data-dir>/media/<first 2 hex>/<sha256>} (the default store, one
 * machine). A download is spooled into {@code media/tmp}, flushed to disk, and only then linked
 * into place, so a file under its hash is always complete; the directory holding the new name is
 * then synced, so the name survives a power loss as well as the bytes.
 */
public final class LocalMediaStore implements MediaStore {
    private final Path root;
    private final MediaSpool spool;

    LocalMediaStore(Path root, MediaSpool spool) {
        this.root = root;
        this.spool = spool;
    }

    @Override
    public StoredFile save(InputStream in, long maxBytes) throws IOException, TooLargeException {
        try (MediaSpool.Spooled part = spool.write(in, maxBytes)) {
            Path target = root.resolve(part.key());
            Path prefix = target.getParent();
            boolean newPrefix = !Files.isDirectory(prefix);
            Files.createDirectories(prefix);
            boolean duplicate;
            try {
                // Creating the name is atomic: of two downloads of the same content at once, exactly
                // one stores it and the other learns it is a duplicate.
                Files.createLink(target, part.file());
                duplicate = false;
            } catch (FileAlreadyExistsException e) {
                duplicate = true;
            }
            if (!duplicate) {
                // The file's bytes were forced before the link; the new name lives in its directory
                // (and a new prefix directory in the root), which a crash could lose unless synced too.
                syncDirectory(prefix);
                if (newPrefix) {
                    syncDirectory(root);
                }
            }
            return new StoredFile(part.sha256(), part.size(), part.key(), duplicate);
        }
    }

    /** fsync of a directory: makes the names created in it durable (POSIX; Windows cannot open a directory). */
    static void syncDirectory(Path dir) throws IOException {
        if (File.separatorChar == '\\') {
            return;
        }
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    @Override
    public InputStream open(String relativePath) throws IOException {
        return Files.newInputStream(root.resolve(relativePath));
    }

    @Override
    public void delete(String relativePath) throws IOException {
        Files.deleteIfExists(root.resolve(relativePath));
    }

    @Override
    public String description() {
        return "local directory " + root.toAbsolutePath().normalize();
    }

    @Override
    public void close() {
        // Nothing held open between calls.
    }
}
