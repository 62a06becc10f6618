from offprompt.launch import main

raise SystemExit(main())
