// The benchmark's C++ SIMD floor: as bench/floor (serde_json) and bench/floor-sonic (sonic-rs),
// but with simdjson (Debian's libsimdjson-dev), the SIMD parser the others are measured by.
// For each line of stdin, parse it into simdjson's DOM (which validates it whole: grammar,
// strings, numbers, UTF-8); when the value is a JSON string, parse that string's contents once
// more; write the value back compact, one per line, on stdout. A line that does not parse gets a
// short error line on stderr.
//
//   floor-simdjson             parse and write, as the other floors
//   floor-simdjson --validate  parse only, write nothing but the error lines: the least any
//                              tool that checks each line whole must do
//
// It repairs nothing and keeps no record. Built by bench/run.sh:
//   g++ -O3 -std=c++17 -o floor-simdjson floor.cpp -lsimdjson
#include <simdjson.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char **argv) {
    const bool validate = argc > 1 && std::strcmp(argv[1], "--validate") == 0;
    simdjson::dom::parser parser;
    simdjson::dom::parser inner_parser;
    std::string out;
    out.reserve(1 << 16);
    // Stdin is read a MiB at a time into one buffer, reused (as the other floors read through
    // a buffer: no page faults for the whole input); a line is parsed in place there, the
    // bytes after it (the next lines', or the padding) readable, as simdjson requires. The
    // part line at a buffer's end moves to its start; a longer line grows the buffer.
    std::string buf(1 << 20, ' ');
    size_t held = 0;  // bytes in buf, from its start
    unsigned long number = 0;
    bool eof = false;
    while (!eof || held) {
        if (!eof) {
            if (buf.size() - held < (1 << 16) + simdjson::SIMDJSON_PADDING) buf.resize(buf.size() * 2, ' ');
            ssize_t n = read(0, &buf[held], buf.size() - held - simdjson::SIMDJSON_PADDING);
            if (n < 0) return 1;
            if (n == 0) eof = true;
            held += n;
        }
        const char *p = buf.data();
        const char *end = p + held;
        for (;;) {
            const char *nl = static_cast<const char *>(std::memchr(p, '\n', end - p));
            if (!nl) {
                if (!eof || p == end) break;
                nl = end;  // the last line, with no newline
            }
            size_t len = nl - p;
            if (len && p[len - 1] == '\r') len--;
            number++;
            simdjson::dom::element value;
            auto error = parser.parse(reinterpret_cast<const uint8_t *>(p), len, false).get(value);
            if (!error && value.is_string()) {
                // The string's contents are not padded where they lie: parse a padded copy.
                std::string_view text = value.get_string().value_unsafe();
                error = inner_parser.parse(text.data(), text.size(), true).get(value);
            }
            if (error) {
                std::fprintf(stderr, "line %lu: %s\n", number, simdjson::error_message(error));
            } else if (!validate) {
                out += simdjson::to_string(value);
                out.push_back('\n');
                if (out.size() >= (1 << 16)) {
                    std::fwrite(out.data(), 1, out.size(), stdout);
                    out.clear();
                }
            }
            p = nl == end ? end : nl + 1;
        }
        held = end - p;
        std::memmove(&buf[0], p, held);
        // The padding after the held bytes: spaces, whatever was there before.
        std::memset(&buf[held], ' ', simdjson::SIMDJSON_PADDING);
        if (eof && held == 0) break;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}
