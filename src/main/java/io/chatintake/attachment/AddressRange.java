package io.chatintake.attachment;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Locale;

/** An address block in CIDR notation ({@code 10.0.0.0/8}, {@code fc00::/7}), or one address. */
record AddressRange(byte[] network, int prefixLength) {
    /** Where attachments are never fetched from unless allowed: loopback, private, link-local (cloud metadata), and the like. */
    static final List<AddressRange> NOT_PUBLIC = List.of(
            parse("0.0.0.0/8"), parse("10.0.0.0/8"), parse("100.64.0.0/10"), parse("127.0.0.0/8"),
            parse("169.254.0.0/16"), parse("172.16.0.0/12"), parse("192.0.0.0/24"), parse("192.168.0.0/16"),
            parse("198.18.0.0/15"), parse("224.0.0.0/4"), parse("240.0.0.0/4"),
            parse("::/96"), parse("fc00::/7"), parse("fe80::/10"), parse("fec0::/10"), parse("ff00::/8"));
    /** NAT64 (RFC 6052): the IPv4 address in its last 32 bits is where the connection really goes. */
    private static final AddressRange NAT64 = parse("64:ff9b::/96");

    /**
     * Only literal addresses are accepted, so parsing never asks DNS.
     * @throws IllegalArgumentException for anything else
     */
    static AddressRange parse(String text) {
        String trimmed = text.trim();
        int slash = trimmed.indexOf('/');
        String address = slash < 0 ? trimmed : trimmed.substring(0, slash);
        if (!address.matches("[0-9a-fA-F:.]+") || !address.contains(".") && !address.contains(":")) {
            throw new IllegalArgumentException("'" + text + "' is not an IP address or CIDR block");
        }
        byte[] bytes;
        try {
            bytes = InetAddress.getByName(address.toLowerCase(Locale.ROOT)).getAddress();
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + text + "' is not an IP address or CIDR block", e);
        }
        int length = slash < 0 ? bytes.length * 8 : Integer.parseInt(trimmed.substring(slash + 1));
        if (length < 0 || length > bytes.length * 8) {
            throw new IllegalArgumentException("'" + text + "' has a prefix length out of range");
        }
        return new AddressRange(bytes, length);
    }

    static boolean looksLikeRange(String text) {
        return text.contains("/") || text.matches("[0-9.]+") || text.contains(":");
    }

    boolean contains(InetAddress address) {
        byte[] bytes = address.getAddress();
        if (bytes.length != network.length) {
            return false;
        }
        int full = prefixLength / 8;
        for (int i = 0; i < full; i++) {
            if (bytes[i] != network[i]) {
                return false;
            }
        }
        int rest = prefixLength % 8;
        if (rest == 0) {
            return true;
        }
        int mask = (0xff << (8 - rest)) & 0xff;
        return (bytes[full] & mask) == (network[full] & mask);
    }

    /** Not on the public internet, as far as this process can tell from the address alone. */
    static boolean notPublic(InetAddress address) {
        if (NOT_PUBLIC.stream().anyMatch(range -> range.contains(address))) {
            return true;
        }
        if (NAT64.contains(address)) {
            byte[] v6 = address.getAddress();
            try {
                return notPublic(InetAddress.getByAddress(new byte[] {v6[12], v6[13], v6[14], v6[15]}));
            } catch (UnknownHostException e) {
                throw new IllegalStateException("four bytes are always an IPv4 address", e);
            }
        }
        return false;
    }
}
