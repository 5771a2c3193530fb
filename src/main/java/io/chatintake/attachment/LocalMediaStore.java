package io.chatintake.attachment;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Downloaded files under {@code <data-dir>/media/<first 2 hex>/<sha256>} (the default store, one
 * machine). A download is spooled into {@code media/tmp}, flushed to disk, and only then linked
 * into place, so a file under its hash is always complete.
 */
public final class LocalMediaStore implements MediaStore {
    private final Path root;
    private final MediaSpool spool;

    public LocalMediaStore(Path root) {
        this.root = root;
        this.spool = new MediaSpool(root.resolve("tmp"));
    }

    @Override
    public StoredFile save(InputStream in, long maxBytes) throws IOException, TooLargeException {
        try (MediaSpool.Spooled part = spool.write(in, maxBytes)) {
            Path target = root.resolve(part.key());
            Files.createDirectories(target.getParent());
            boolean duplicate;
            try {
                // Creating the name is atomic: of two downloads of the same content at once, exactly
                // one stores it and the other learns it is a duplicate.
                Files.createLink(target, part.file());
                duplicate = false;
            } catch (FileAlreadyExistsException e) {
                duplicate = true;
            }
            return new StoredFile(part.sha256(), part.size(), part.key(), duplicate);
        }
    }

    @Override
    public InputStream open(String relativePath) throws IOException {
        return Files.newInputStream(root.resolve(relativePath));
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
