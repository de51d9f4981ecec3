// The link rates a trace ran with (format 1.4): written in the header, read
// back as they were, and absent from traces written before them.
#include "trace_fixtures.h"

#include "core/trace/format/reader.h"
#include "core/trace/format/writer.h"

#include <catch2/catch.hpp>

#include <string>

using namespace uvmp::trace;

namespace {

uvmp::rates::LinkRates h100_probe() {
    uvmp::rates::LinkRates rates;
    rates.fetch_gbps = 38.4;
    rates.evict_gbps = 13.5;
    rates.remote_write_gbps = 24.25;
    rates.remote_read_gbps = 22.2;
    rates.memory_gbps = 3350;
    rates.populate_gbps = 231.5;
    rates.source = uvmp::rates::Source::Probe;
    rates.device = {"NVIDIA H100 80GB HBM3", "GPU-00112233-4455-6677-8899-aabbccddeeff", "13.0"};
    rates.measured_unix_s = 1764979200;
    return rates;
}

} // namespace

TEST_CASE("a trace's rates read back as they were written", "[trace_io][rates]") {
    TrainingLoopShape shape;
    shape.steps = 3;
    Trace original = make_training_loop(shape);
    original.header.rates = h100_probe();
    const std::string path = fixtures::scratch_path("rates-roundtrip.uvmt");
    REQUIRE(write_trace_file(original, path) == 0);
    const Trace read = read_trace_file(path);
    CHECK(read.header.format_minor == 5);
    REQUIRE(read.header.rates);
    const uvmp::rates::LinkRates& r = *read.header.rates;
    const uvmp::rates::LinkRates expected = h100_probe();
    CHECK(r.fetch_gbps == Approx(expected.fetch_gbps));
    CHECK(r.evict_gbps == Approx(expected.evict_gbps));
    CHECK(r.remote_write_gbps == Approx(expected.remote_write_gbps));
    CHECK(r.remote_read_gbps == Approx(expected.remote_read_gbps));
    CHECK(r.memory_gbps == Approx(expected.memory_gbps));
    CHECK(r.populate_gbps == Approx(expected.populate_gbps));
    CHECK(r.source == uvmp::rates::Source::Probe);
    CHECK(r.device == expected.device);
    CHECK(r.measured_unix_s == expected.measured_unix_s);
    // The rest of the header is where it was.
    CHECK(read.header.options == original.header.options);
    CHECK(read.launches.size() == original.launches.size());
}

TEST_CASE("a trace without rates reads back without them", "[trace_io][rates]") {
    TrainingLoopShape shape;
    shape.steps = 2;
    const std::string path = fixtures::scratch_path("rates-none.uvmt");
    REQUIRE(write_trace_file(make_training_loop(shape), path) == 0);
    CHECK_FALSE(read_trace_file(path).header.rates);
}

TEST_CASE("a trace written before rates reads without them", "[trace_io][rates]") {
    // Recorded with format 1.3, before the header held rates.
    const Trace old = read_trace_file(std::string(UVMP_SOURCE_DIR) + "/tests/data/resnet50-b256-nocache.uvmt");
    CHECK(old.header.format_minor < 4);
    CHECK_FALSE(old.header.rates);
    CHECK_FALSE(old.launches.empty());
}
