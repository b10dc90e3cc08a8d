#include "json_file.hpp"

#include "ceilings.hpp"  // write_file_atomically

namespace flopscope::bench {

WholeJsonFile::WholeJsonFile(std::string path) : path_(std::move(path)) {
  json_.SetOutputStream(&text_);
  json_.SetErrorStream(&text_);
  std::ostringstream end;
  benchmark::JSONReporter closer;
  closer.SetOutputStream(&end);
  closer.SetErrorStream(&end);
  closer.Finalize();
  closing_ = end.str();
}

bool WholeJsonFile::ReportContext(const Context& context) {
  const bool ok = json_.ReportContext(context);
  save(closing_);
  return ok;
}

void WholeJsonFile::ReportRuns(const std::vector<Run>& runs) {
  json_.ReportRuns(runs);
  save(closing_);
}

void WholeJsonFile::Finalize() {
  json_.Finalize();
  save("");
}

void WholeJsonFile::save(const std::string& tail) {
  try {
    write_file_atomically(path_, text_.str() + tail);
  } catch (const std::exception& error) {
    if (!error_) error_ = error.what();
  }
}

}  // namespace flopscope::bench
